/**
 * The `ws` adapter: with hub-socket.ts (its WebSocket class), the only module that imports ws. Accepts SDK WebSocket upgrades on `/ws` (and
 * on `/`, so a bare `ws://host:port` works) of the hub's HTTP server (noServer + handleUpgrade,
 * one port for everything), binary frames only,
 * no per-message deflate (frames are small msgpack; compression would cost CPU on every broadcast).
 * Before the upgrade it checks the Origin, and until Hello is accepted it holds each socket to
 * the admission limits (server/admission.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { ErrorCode, ProtocolError } from '@hotkey/sdk';
import { CloseCode, errorFrame, MAX_FRAME_BYTES } from '@hotkey/sdk/protocol';
import type { HubCore } from '../core/hub-core.ts';
import { closeReason, type Peer } from '../core/peer.ts';
import { HandshakePool, OriginPolicy } from './admission.ts';
import { Heartbeat } from './heartbeat.ts';
import { HubSocket } from './hub-socket.ts';

/** One connection on an endpoint: the adapter hands it every frame and the close. */
export interface SocketConnection {
  onFrame(bytes: Uint8Array, isBinary: boolean): void;
  onClose(): void;
  /** true once its Hello was accepted: the admission limits stop applying */
  readonly admitted: boolean;
}

/** ms between the close frame to a socket refused before Hello and dropping it */
const REFUSED_LINGER_MS = 250;

export interface SocketServerOptions {
  /** browser origins allowed besides none (see OriginPolicy) @default [] */
  allowedOrigins?: readonly string[];
}

/** what admission refused so far (for tests and metrics) */
export interface AdmissionCounters {
  /** handshakes refused with HTTP 403 for their Origin */
  originRefused: number;
  /** sockets closed 4009 to keep the unauthenticated caps */
  unauthenticatedEvicted: number;
  /** sockets closed 4004 for sending over `preHelloBytes` before Hello */
  preHelloOverBudget: number;
  /** sockets open without an accepted Hello now */
  unauthenticated: number;
}
/** An extra WebSocket path (the dashboard's `/live`) and what accepts its connections. */
/** `remote`: the socket's remote address ('' when unknown) */
export type SocketEndpoint = (peer: Peer, remote: string) => SocketConnection;

export const WS_PATH = '/ws';

export class SocketServer {
  readonly #wss: WebSocketServer;
  readonly #core: HubCore;
  readonly #endpoints: ReadonlyMap<string, SocketEndpoint>;
  /** pings every socket once per `pingIntervalMs`, spread over the interval; drops the silent ones */
  readonly #heartbeat: Heartbeat<WebSocket>;
  readonly #origins: OriginPolicy;
  readonly #handshakes: HandshakePool<WebSocket>;
  readonly #counters = { originRefused: 0, unauthenticatedEvicted: 0, preHelloOverBudget: 0 };

  /** @param [endpoints] extra paths besides WS_PATH, e.g. the dashboard feed (the hub's own page may open these) */
  constructor(core: HubCore, endpoints: Record<string, SocketEndpoint> = {}, options: SocketServerOptions = {}) {
    this.#core = core;
    this.#endpoints = new Map(Object.entries(endpoints));
    this.#origins = new OriginPolicy(options.allowedOrigins);
    this.#handshakes = new HandshakePool(
      core.tunables.maxUnauthenticatedSockets,
      core.tunables.maxUnauthenticatedPerAddress,
    );
    this.#wss = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      // ws itself closes with 1009 above this; frames between MAX_FRAME_BYTES and this limit get
      // a readable Error frame + 4004 from the protocol decoder instead
      maxPayload: 4 * MAX_FRAME_BYTES,
      clientTracking: true,
      // sendBroadcast: a broadcast framed once for all sockets
      WebSocket: HubSocket,
    });
    this.#heartbeat = new Heartbeat(core.tunables.pingIntervalMs);
  }

  get counters(): AdmissionCounters {
    return { ...this.#counters, unauthenticated: this.#handshakes.size };
  }

  /** `upgrade` listener for the HTTP server. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const path = (req.url ?? '').split('?')[0];
    const sdkPath = path === WS_PATH || path === '/';
    const attach: SocketEndpoint | undefined = sdkPath
      ? (peer, remote) => this.#core.attach(peer, remote)
      : this.#endpoints.get(path ?? '');
    if (attach === undefined) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    // a browser page on another origin must not read the feed or join an app (open mode) with the
    // visitor's network position; Node SDKs send no Origin
    if (!this.#origins.allows(req.headers.origin, req.headers.host, !sdkPath)) {
      this.#counters.originRefused++;
      const body = `${ErrorCode.Origin}: this origin may not open a WebSocket here (see the hub's allowedOrigins / --allow-origin)\n`;
      socket.end(
        `HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      return;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) =>
      this.#accept(ws, attach, socket, req.socket.remoteAddress ?? ''),
    );
  }

  #accept(ws: WebSocket, attach: SocketEndpoint, socket: Duplex, address: string): void {
    const session = attach(ws, address);
    this.#heartbeat.add(ws);
    ws.on('pong', () => this.#heartbeat.heard(ws));
    ws.on('message', (data, isBinary) => {
      this.#heartbeat.heard(ws);
      const bytes = Array.isArray(data)
        ? Buffer.concat(data)
        : data instanceof ArrayBuffer
          ? new Uint8Array(data)
          : data;
      session.onFrame(bytes, isBinary);
      if (session.admitted) this.#handshakes.leave(ws);
    });
    ws.on('close', () => {
      this.#heartbeat.remove(ws);
      this.#handshakes.leave(ws);
      session.onClose();
    });
    // ws reports frames it refuses (over maxPayload, bad opcodes) here and closes the socket itself
    ws.on('error', () => {
      this.#core.metrics.protocolErrors++;
    });
    if (session.admitted || ws.readyState !== ws.OPEN) return;
    for (const old of this.#handshakes.enter(ws, address)) {
      this.#counters.unauthenticatedEvicted++;
      this.#refuse(
        old,
        new ProtocolError(
          ErrorCode.OverCapacity,
          'too many connections are waiting to send Hello: retry',
          CloseCode.OverCapacity,
        ),
      );
    }
    // the byte budget before Hello, counted on the raw socket: ws's listener ran first on each
    // read, so a Hello in this chunk has already admitted the session (ws unshifts the upgrade's
    // head into the socket, so it is counted here too)
    let received = 0;
    const budget = this.#core.tunables.preHelloBytes;
    const onData = (chunk: Buffer) => {
      if (session.admitted || !this.#handshakes.has(ws)) {
        socket.off('data', onData);
        return;
      }
      received += chunk.byteLength;
      if (received <= budget) return;
      socket.off('data', onData);
      this.#counters.preHelloOverBudget++;
      this.#handshakes.leave(ws);
      // no lingering close handshake: while it waited, the peer's unread bytes would fill kernel
      // buffers (megabytes per socket, TCP memory pressure for every connection); the Error and
      // close frames are written now and the socket is dropped on the next turn
      socket.pause();
      this.#refuse(
        ws,
        new ProtocolError(ErrorCode.FrameTooLarge, `more than ${budget} bytes before Hello`, CloseCode.FrameTooLarge),
        0,
      );
    };
    socket.on('data', onData);
  }

  /** Error frame + close, then drop the socket shortly after whether or not the peer answers. */
  #refuse(ws: WebSocket, err: ProtocolError, lingerMs = REFUSED_LINGER_MS): void {
    try {
      ws.send(errorFrame(err));
      ws.close(err.closeCode, closeReason(err.message));
    } catch {
      // already closing
    }
    if (lingerMs === 0) setImmediate(() => ws.terminate());
    else setTimeout(() => ws.terminate(), lingerMs).unref();
  }

  /** Waits up to `timeoutMs` for clients to finish closing, then drops the rest. */
  async close(timeoutMs = 1000): Promise<void> {
    this.#heartbeat.stop();
    const deadline = Date.now() + timeoutMs;
    while (this.#wss.clients.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const ws of this.#wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }
}
