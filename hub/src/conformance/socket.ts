/**
 * The conformance kit's `ws` adapter (its only module that imports ws): one WebSocket to or from
 * the implementation under test, every frame it receives kept in arrival order with its decoding
 * (the message, or why it was refused), and waits that always end — on a match, on the close, or
 * at their deadline. The kit never throws at the peer: whatever arrives is recorded and judged.
 */
import { once } from 'node:events';
import WebSocket, { WebSocketServer } from 'ws';
import { closeCodeOf } from '@hotkey/sdk/errors';
import { encode, MAX_FRAME_BYTES, type Message } from '@hotkey/sdk/protocol';

export interface Frame {
  /** performance.now() at arrival */
  at: number;
  binary: boolean;
  bytes: Uint8Array;
  /** the decoded message; undefined when the frame was refused (see `error`) */
  message?: Message;
  /** why the decoder refused it: `CODE (close N) message` */
  error?: string;
}

export interface Closed {
  code: number;
  reason: string;
  at: number;
}

export type Decoder = (bytes: Uint8Array) => Message;

/** Sleepers woken early by news (a frame, a close, a connection), each at its deadline at the latest. */
class Wakers {
  readonly #all = new Set<() => void>();

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#all.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#all.add(done);
    });
  }

  wake(): void {
    for (const wake of [...this.#all]) wake();
  }
}

export class Link {
  readonly frames: Frame[] = [];
  closed: Closed | undefined;
  /** called for each frame as it arrives, before any wait sees it */
  onFrame: ((frame: Frame) => void) | undefined;
  readonly #ws: WebSocket;
  readonly #wakers = new Wakers();

  constructor(ws: WebSocket, decode: Decoder) {
    this.#ws = ws;
    ws.on('message', (data, isBinary) => {
      const bytes = new Uint8Array(Array.isArray(data) ? Buffer.concat(data) : (data as Buffer));
      const frame: Frame = { at: performance.now(), binary: isBinary, bytes };
      try {
        if (isBinary) frame.message = decode(bytes);
        else frame.error = 'a text frame';
      } catch (err) {
        frame.error = `${(err as { code?: string }).code ?? 'error'} (close ${closeCodeOf(err) ?? '?'}) ${(err as Error).message}`;
      }
      this.frames.push(frame);
      this.onFrame?.(frame);
      this.#wakers.wake();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString(), at: performance.now() };
      this.#wakers.wake();
    });
    ws.on('error', () => {}); // the close that follows is what counts
  }

  /** Opens a client socket to `url`; rejects when it does not open within `timeoutMs`. */
  static async connect(url: string, decode: Decoder, timeoutMs: number): Promise<Link> {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 4 * MAX_FRAME_BYTES });
    const link = new Link(ws, decode);
    try {
      await once(ws, 'open', { signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      ws.terminate();
      throw new Error(`could not open ${url}: ${(err as Error).message}`);
    }
    return link;
  }

  get open(): boolean {
    return this.#ws.readyState === WebSocket.OPEN;
  }

  send(message: Message): void {
    this.sendBytes(encode(message));
  }

  sendBytes(bytes: Uint8Array): void {
    if (this.open) this.#ws.send(bytes, { binary: true });
  }

  sendText(text: string): void {
    if (this.open) this.#ws.send(text, { binary: false });
  }

  close(code = 1000, reason = ''): void {
    if (this.open) this.#ws.close(code, reason);
    else this.#ws.terminate();
  }

  terminate(): void {
    this.#ws.terminate();
  }

  /** Index of the next frame to arrive: pass it to `next` to look only at later frames. */
  mark(): number {
    return this.frames.length;
  }

  /** The first frame from index `from` on that `match`es, waiting up to `timeoutMs`; undefined at the deadline or the close. */
  async next(match: (frame: Frame) => boolean, timeoutMs: number, from = 0): Promise<Frame | undefined> {
    const deadline = performance.now() + timeoutMs;
    let i = from;
    for (;;) {
      for (; i < this.frames.length; i++) if (match(this.frames[i]!)) return this.frames[i];
      if (this.closed !== undefined) return undefined;
      const left = deadline - performance.now();
      if (left <= 0) return undefined;
      await this.#wakers.sleep(left);
    }
  }

  /** The close, waiting up to `timeoutMs`; undefined when still open then. */
  async waitClosed(timeoutMs: number): Promise<Closed | undefined> {
    const deadline = performance.now() + timeoutMs;
    while (this.closed === undefined) {
      const left = deadline - performance.now();
      if (left <= 0) return undefined;
      await this.#wakers.sleep(left);
    }
    return this.closed;
  }
}

/** A WebSocket server for the client check: every connection becomes a Link, handed out in order. */
export class Listener {
  readonly #wss: WebSocketServer;
  readonly #queue: Link[] = [];
  readonly #all: Link[] = [];
  readonly #wakers = new Wakers();
  /** connections accepted so far */
  accepted = 0;

  private constructor(wss: WebSocketServer, decode: Decoder) {
    this.#wss = wss;
    wss.on('connection', (ws) => {
      const link = new Link(ws, decode);
      this.accepted++;
      this.#queue.push(link);
      this.#all.push(link);
      this.#wakers.wake();
    });
  }

  static async listen(host: string, port: number, decode: Decoder): Promise<Listener> {
    const wss = new WebSocketServer({ host, port, perMessageDeflate: false, maxPayload: 4 * MAX_FRAME_BYTES });
    await once(wss, 'listening');
    return new Listener(wss, decode);
  }

  get url(): string {
    const address = this.#wss.address();
    if (typeof address === 'string' || address === null) throw new Error('not listening');
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `ws://${host}:${address.port}/ws`;
  }

  /** The next connection, waiting up to `timeoutMs`; undefined at the deadline. */
  async nextLink(timeoutMs: number): Promise<Link | undefined> {
    const deadline = performance.now() + timeoutMs;
    while (this.#queue.length === 0) {
      const left = deadline - performance.now();
      if (left <= 0) return undefined;
      await this.#wakers.sleep(left);
    }
    return this.#queue.shift();
  }

  async close(): Promise<void> {
    for (const link of this.#all) link.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }
}

/** Resolves after `ms` (the kit's pauses between steps). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
