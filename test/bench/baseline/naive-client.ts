/**
 * The naive client the benchmarks compare against: counts every key in a plain Map, and every
 * 500 ms (JD HotKey's client push interval) sends every key it saw, with its count, as one JSON
 * frame; hot keys are served from a plain Map of values. No per-instance threshold, no bound on
 * the counting map between flushes. Same `ws` library as the real SDK.
 */
import WebSocket from 'ws';
import { once } from 'node:events';

export interface NaiveClientOptions {
  url: string;
  app: string;
  /** @default a random id */
  instance?: string;
  /** report interval @default 500 */
  intervalMs?: number;
  /** called on each promotion as it arrives (benchmarks time deliveries with it) */
  onPromote?: (key: string, at: number) => void;
}

export class NaiveClient {
  readonly #ws: WebSocket;
  readonly #counts = new Map<string, number>();
  readonly #hot = new Map<string, { value: unknown; has: boolean }>();
  readonly #timer: NodeJS.Timeout;
  readonly #onPromote: ((key: string, at: number) => void) | undefined;

  private constructor(ws: WebSocket, opts: NaiveClientOptions) {
    this.#ws = ws;
    this.#onPromote = opts.onPromote;
    ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string; key: string; at?: number };
      if (message.type === 'promote') {
        if (!this.#hot.has(message.key)) this.#hot.set(message.key, { value: undefined, has: false });
        this.#onPromote?.(message.key, message.at ?? 0);
      } else if (message.type === 'demote') this.#hot.delete(message.key);
    });
    ws.on('error', () => undefined);
    this.#timer = setInterval(() => this.flush(), opts.intervalMs ?? 500);
    this.#timer.unref();
  }

  static async connect(opts: NaiveClientOptions, timeoutMs = 5000): Promise<NaiveClient> {
    const ws = new WebSocket(opts.url, { perMessageDeflate: false });
    await once(ws, 'open', { signal: AbortSignal.timeout(timeoutMs) });
    ws.send(
      JSON.stringify({ type: 'hello', app: opts.app, instance: opts.instance ?? Math.random().toString(36).slice(2) }),
    );
    return new NaiveClient(ws, opts);
  }

  track(key: string): void {
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  /** The cached value of a hot key, else the loader's (cached when the key is hot). */
  get<T>(key: string, loader: () => T): T {
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
    const entry = this.#hot.get(key);
    if (entry?.has) return entry.value as T;
    const value = loader();
    if (entry !== undefined) {
      entry.value = value;
      entry.has = true;
    }
    return value;
  }

  isHot(key: string): boolean {
    return this.#hot.has(key);
  }

  /** Sends every counted key and starts counting afresh. */
  flush(): void {
    if (this.#counts.size === 0 || this.#ws.readyState !== WebSocket.OPEN) return;
    const keys: Record<string, number> = {};
    for (const [key, count] of this.#counts) keys[key] = count;
    this.#counts.clear();
    this.#ws.send(JSON.stringify({ type: 'report', keys }));
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    if (this.#ws.readyState === WebSocket.CLOSED) return;
    const closed = once(this.#ws, 'close', { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
    this.#ws.close();
    await closed;
  }
}
