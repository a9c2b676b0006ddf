/**
 * Test support only: a minimal hub-side protocol peer (a real `ws` server on 127.0.0.1:0 that
 * speaks protocol.ts frames) so the SDK's connection logic is tested against a real socket
 * whose every frame the test controls. It answers Hello with the Welcome the test configures and
 * grants every lease (unless told not to) and otherwise only does what the test tells it to.
 */
import { once } from 'node:events';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  decodeClientMessage,
  encode,
  MsgType,
  negotiateVersion,
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
  /** every frame after the Hello, decoded (Lease requests only when the peer does not grant them) */
  received: ClientMessage[];
  /** Lease requests granted so far */
  grants: number;
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
  /**
   * Lease requests are answered at once with a Grant of this many ms and not listed in
   * `received`; false: they are listed and left unanswered (the test grants) @default 60000
   */
  leaseMs?: number | false;
  /**
   * The protocol versions this peer speaks, [oldest, newest]: a Hello is negotiated against them
   * (versions.ts) and refused with 4001 when they do not meet @default [PROTOCOL_VERSION, PROTOCOL_VERSION], unchecked
   */
  versions?: [number, number];
  /** the Welcome's `v` whatever was negotiated (a hub breaking the negotiation) */
  welcomeV?: number;
  /**
   * Holds (protocol 3) are answered at once, every key Recorded, as a hub no write reached, and
   * not listed in `received`; false: they are listed and left unanswered (the test answers) @default true
   */
  answerHolds?: boolean;
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

  welcome(v = PROTOCOL_VERSION): Welcome {
    const rules = this.opts.rules ?? [];
    return {
      t: MsgType.Welcome,
      v: this.opts.welcomeV ?? v,
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
          grants: 0,
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
        const range = this.opts.versions;
        const version = range === undefined ? PROTOCOL_VERSION : negotiateVersion(message, range[0], range[1]);
        if (version === undefined) {
          const text = `protocol versions ${message.vmin ?? message.v} to ${message.v} not supported; this peer speaks ${range![0]} to ${range![1]}`;
          socket.send({ t: MsgType.Error, code: 'HK_ERR_VERSION', message: text });
          ws.close(4001, 'version');
        } else if (refuse) {
          socket.send({ t: MsgType.Error, code: refuse.errorCode, message: 'refused by test peer' });
          ws.close(refuse.code, 'refused');
        } else {
          socket.send(this.welcome(version));
          if (this.opts.snapshot !== false) socket.send({ t: MsgType.Snapshot, seq: this.opts.seq ?? 0, hot: [] });
        }
        this.#waiters.shift()?.(socket);
        return;
      }
      const leaseMs = this.opts.leaseMs ?? 60_000;
      if (message.t === MsgType.Lease && leaseMs !== false) {
        socket.grants++;
        return socket.send({ t: MsgType.Grant, id: message.id, ms: leaseMs });
      }
      if (message.t === MsgType.Hold && this.opts.answerHolds !== false)
        return socket.send({ t: MsgType.Held, id: message.id, r: message.keys.map(() => 0), w: 0 });
      if (message.t === MsgType.Release && this.opts.answerHolds !== false) return;
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
