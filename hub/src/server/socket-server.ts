/**
 * The `ws` adapter: the only module that imports ws. Accepts SDK WebSocket upgrades on `/ws` (and
 * on `/`, so a bare `ws://host:port` works) of the hub's HTTP server (noServer + handleUpgrade,
 * one port for everything), binary frames only,
 * no per-message deflate (frames are small msgpack; compression would cost CPU on every broadcast).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { MAX_FRAME_BYTES } from '@hotkey/sdk/protocol';
import type { HubCore } from '../core/hub-core.ts';
import type { Peer } from '../core/peer.ts';

/** One connection on an endpoint: the adapter hands it every frame and the close. */
export interface SocketConnection {
  onFrame(bytes: Uint8Array, isBinary: boolean): void;
  onClose(): void;
}
/** An extra WebSocket path (the dashboard's `/live`) and what accepts its connections. */
export type SocketEndpoint = (peer: Peer) => SocketConnection;

export const WS_PATH = '/ws';

export class SocketServer {
  readonly #wss: WebSocketServer;
  readonly #core: HubCore;
  readonly #endpoints: ReadonlyMap<string, SocketEndpoint>;
  /** sockets pinged and not heard from since: dropped at the next round (a peer that vanished without a FIN) */
  readonly #unanswered = new WeakSet<WebSocket>();
  readonly #heartbeat: NodeJS.Timeout;

  /** @param [endpoints] extra paths besides WS_PATH, e.g. the dashboard feed */
  constructor(core: HubCore, endpoints: Record<string, SocketEndpoint> = {}) {
    this.#core = core;
    this.#endpoints = new Map(Object.entries(endpoints));
    this.#wss = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      // ws itself closes with 1009 above this; frames between MAX_FRAME_BYTES and this limit get
      // a readable Error frame + 4004 from the protocol decoder instead
      maxPayload: 4 * MAX_FRAME_BYTES,
      clientTracking: true,
    });
    this.#heartbeat = setInterval(() => this.#ping(), Math.max(1, core.tunables.pingIntervalMs));
    this.#heartbeat.unref();
  }

  #ping(): void {
    for (const ws of this.#wss.clients) {
      if (this.#unanswered.has(ws)) {
        ws.terminate(); // emits 'close': the session leaves its app
        continue;
      }
      this.#unanswered.add(ws);
      try {
        ws.ping();
      } catch {
        // not open yet or already closing
      }
    }
  }

  /** `upgrade` listener for the HTTP server. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const path = (req.url ?? '').split('?')[0];
    const attach: SocketEndpoint | undefined =
      path === WS_PATH || path === '/' ? (peer) => this.#core.attach(peer) : this.#endpoints.get(path ?? '');
    if (attach === undefined) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, attach));
  }

  #accept(ws: WebSocket, attach: SocketEndpoint): void {
    const session = attach(ws);
    ws.on('pong', () => this.#unanswered.delete(ws));
    ws.on('message', (data, isBinary) => {
      this.#unanswered.delete(ws);
      const bytes = Array.isArray(data)
        ? Buffer.concat(data)
        : data instanceof ArrayBuffer
          ? new Uint8Array(data)
          : data;
      session.onFrame(bytes, isBinary);
    });
    ws.on('close', () => session.onClose());
    // ws reports frames it refuses (over maxPayload, bad opcodes) here and closes the socket itself
    ws.on('error', () => {
      this.#core.metrics.protocolErrors++;
    });
  }

  /** Waits up to `timeoutMs` for clients to finish closing, then drops the rest. */
  async close(timeoutMs = 1000): Promise<void> {
    clearInterval(this.#heartbeat);
    const deadline = Date.now() + timeoutMs;
    while (this.#wss.clients.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const ws of this.#wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }
}
