/**
 * A raw protocol peer for hub tests: a `ws` client that encodes and decodes with protocol.ts only,
 * queues every server message, and waits for the next one matching a predicate (with a deadline).
 */
import { once } from 'node:events';
import WebSocket from 'ws';
import {
  decodeServerMessage,
  encode,
  MsgType,
  PROTOCOL_VERSION,
  type ClientMessage,
  type Message,
  type ServerMessage,
  type Snapshot,
  type Welcome,
} from '@hotkey/sdk/protocol';
import { within } from './wait.ts';

export interface Closed {
  code: number;
  reason: string;
}

export class RawClient {
  readonly ws: WebSocket;
  readonly received: ServerMessage[] = [];
  /** every frame as it arrived, undecoded (what a peer of another version would read) */
  readonly frames: Uint8Array[] = [];
  readonly closed: Promise<Closed>;
  #cursor = 0;
  #wake: (() => void) | undefined;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    this.closed = new Promise((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    ws.on('message', (data, isBinary) => {
      if (!isBinary) throw new Error('hub sent a text frame');
      this.frames.push(data as Buffer);
      this.received.push(decodeServerMessage(data as Buffer));
      this.#wake?.();
    });
    ws.on('close', () => this.#wake?.());
    ws.on('error', () => {});
  }

  /** @param [autoPong=true] false: never answer the hub's pings (a dead peer) */
  static async connect(url: string, timeoutMs = 3000, autoPong = true): Promise<RawClient> {
    const ws = new WebSocket(url, { perMessageDeflate: false, autoPong });
    const client = new RawClient(ws);
    await once(ws, 'open', { signal: AbortSignal.timeout(timeoutMs) });
    return client;
  }

  /** Connects and completes the Hello → Welcome + Snapshot handshake. */
  static async join(
    url: string,
    app: string,
    opts: {
      token?: string;
      instance?: string;
      host?: string;
      autoPong?: boolean;
      /** the Hello's `v` (default PROTOCOL_VERSION) and `vmin` (default absent, as a version-1 SDK sends it) */
      v?: number;
      vmin?: number;
    } = {},
  ): Promise<{ client: RawClient; welcome: Welcome; snapshot: Snapshot }> {
    const client = await RawClient.connect(url, 3000, opts.autoPong ?? true);
    client.send({
      t: MsgType.Hello,
      v: opts.v ?? PROTOCOL_VERSION,
      ...(opts.vmin === undefined ? {} : { vmin: opts.vmin }),
      app,
      token: opts.token,
      instance: opts.instance ?? `i-${Math.random().toString(36).slice(2)}`,
      sdk: 'raw-test',
      host: opts.host,
    });
    const welcome = await client.next(MsgType.Welcome);
    const snapshot = await client.next(MsgType.Snapshot);
    return { client, welcome, snapshot };
  }

  send(message: ClientMessage | Message): void {
    this.ws.send(encode(message as Message));
  }

  sendRaw(data: Uint8Array | string): void {
    this.ws.send(data, { binary: typeof data !== 'string' });
  }

  /** The next message of type `t` (skipping others), within `timeoutMs`. */
  async next<T extends ServerMessage['t']>(
    t: T,
    timeoutMs = 3000,
    where: (m: Extract<ServerMessage, { t: T }>) => boolean = () => true,
  ): Promise<Extract<ServerMessage, { t: T }>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (this.#cursor < this.received.length) {
        const m = this.received[this.#cursor++]!;
        if (m.t === t && where(m as Extract<ServerMessage, { t: T }>)) return m as Extract<ServerMessage, { t: T }>;
      }
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `no message t=${t} within ${timeoutMs} ms; got ${JSON.stringify(this.received.map((m) => m.t))}`,
        );
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error(`socket closed while waiting for t=${t}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  /** Messages received so far that were not consumed by `next`, without waiting. */
  pending(): ServerMessage[] {
    return this.received.slice(this.#cursor);
  }

  /** Resolves the close, failing after `timeoutMs`. */
  closeEvent(timeoutMs = 3000): Promise<Closed> {
    return within('the socket to close', this.closed, timeoutMs);
  }

  /** Round trip: Resync → Snapshot proves the connection is alive and its frames are processed in order. */
  async ping(timeoutMs = 3000): Promise<Snapshot> {
    this.send({ t: MsgType.Resync });
    return this.next(MsgType.Snapshot, timeoutMs);
  }

  close(): void {
    this.ws.terminate();
  }
}
