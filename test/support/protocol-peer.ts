/**
 * Test support only: a minimal hub-side protocol peer (a real `ws` server on 127.0.0.1:0 that
 * speaks protocol.ts frames) so the SDK's connection logic is tested against a real socket
 * whose every frame the test controls. It answers Hello with the Welcome the test configures and
 * otherwise only does what the test tells it to.
 */
import { once } from 'node:events';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  decodeClientMessage,
  encode,
  MsgType,
  PROTOCOL_VERSION,
  type ClientMessage,
  type Hello,
  type Member,
  type ServerMessage,
  type Welcome,
} from '@hotkey/sdk/protocol';
import type { Rule } from '@hotkey/sdk/rules';

export interface PeerSocket {
  ws: WebSocket;
  hello: Hello;
  /** every frame after the Hello, decoded */
  received: ClientMessage[];
  send(message: ServerMessage): void;
  /** the next (or an already received, not yet taken) message of type `t`, within `timeoutMs` */
  next<T extends ClientMessage['t']>(t: T, timeoutMs?: number): Promise<Extract<ClientMessage, { t: T }>>;
}

export interface PeerOptions {
  id: string;
  rules?: Rule[];
  local?: number[];
  members?: (self: string) => Member[];
  seq?: number;
  /** answer Hello with this close code (and an Error frame) instead of a Welcome */
  refuse?: { code: number; errorCode: string };
  /** send a Snapshot right after the Welcome @default true */
  snapshot?: boolean;
}

export class ProtocolPeer {
  readonly wss: WebSocketServer;
  readonly sockets: PeerSocket[] = [];
  readonly #waiters: ((s: PeerSocket) => void)[] = [];
  opts: PeerOptions;
  url = '';

  constructor(opts: PeerOptions) {
    this.opts = opts;
    this.wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
    this.wss.on('connection', (ws) => this.#accept(ws));
  }

  async listen(): Promise<this> {
    if (!this.wss.address()) await once(this.wss, 'listening');
    const address = this.wss.address();
    if (typeof address === 'string' || address === null) throw new Error('no address');
    this.url = `ws://127.0.0.1:${address.port}`;
    return this;
  }

  /** the next connection that completes its Hello, within `timeoutMs` */
  nextSocket(timeoutMs = 3000): Promise<PeerSocket> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no connection within ${timeoutMs} ms`)), timeoutMs);
      this.#waiters.push((s) => {
        clearTimeout(timer);
        resolve(s);
      });
    });
  }

  welcome(): Welcome {
    const rules = this.opts.rules ?? [];
    return {
      t: MsgType.Welcome,
      v: PROTOCOL_VERSION,
      hub: this.opts.id,
      epoch: 1,
      members: this.opts.members?.(this.url) ?? [{ id: this.opts.id, url: '' }],
      rules,
      local: this.opts.local ?? rules.map(() => 1),
      instances: 1,
      seq: this.opts.seq ?? 0,
    };
  }

  #accept(ws: WebSocket): void {
    const received: ClientMessage[] = [];
    const wanted: { t: number; resolve: (m: ClientMessage) => void }[] = [];
    let socket: PeerSocket | undefined;
    ws.on('message', (data: Buffer) => {
      const message = decodeClientMessage(data);
      if (socket === undefined) {
        if (message.t !== MsgType.Hello) return ws.close(4000, 'hello first');
        socket = {
          ws,
          hello: message,
          received,
          send: (m) => ws.send(encode(m)),
          next: (t, timeoutMs = 3000) =>
            new Promise((resolve, reject) => {
              const i = received.findIndex((m) => m.t === t);
              if (i >= 0) return resolve(received.splice(i, 1)[0] as never);
              const timer = setTimeout(
                () => reject(new Error(`no message of type ${t} within ${timeoutMs} ms`)),
                timeoutMs,
              );
              wanted.push({
                t,
                resolve: (m) => {
                  clearTimeout(timer);
                  resolve(m as never);
                },
              });
            }),
        };
        this.sockets.push(socket);
        const refuse = this.opts.refuse;
        if (refuse) {
          socket.send({ t: MsgType.Error, code: refuse.errorCode, message: 'refused by test peer' });
          ws.close(refuse.code, 'refused');
        } else {
          socket.send(this.welcome());
          if (this.opts.snapshot !== false) socket.send({ t: MsgType.Snapshot, seq: this.opts.seq ?? 0, hot: [] });
        }
        this.#waiters.shift()?.(socket);
        return;
      }
      const w = wanted.findIndex((x) => x.t === message.t);
      if (w >= 0) wanted.splice(w, 1)[0]!.resolve(message);
      else received.push(message);
    });
  }

  #closed = false;

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const client of this.wss.clients) client.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}
