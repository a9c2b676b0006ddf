/**
 * One SDK connection to one hub URL: binary frames over `ws` (per-message deflate off), the
 * Hello → Welcome handshake, ping/pong liveness and reconnection with capped exponential backoff
 * and full jitter. Close codes in FATAL_CLOSE_CODES (bad version, unknown app, bad token) stop
 * the retries: trying again cannot succeed. The owner (the client) hears everything through a
 * `ConnectionHandler`; nothing here throws into the caller or emits unhandled events.
 */
import WebSocket from 'ws';
import { AuthError, closeCodeOf, ErrorCode, HotKeyError, ProtocolError } from '../errors.ts';
import { DEFAULT_CLIENT_OPTIONS, type ClientTlsOptions } from '../options.ts';
import {
  CloseCode,
  decodeServerMessage,
  describeRange,
  encode,
  FATAL_CLOSE_CODES,
  MAX_FRAME_BYTES,
  MsgType,
  offeredRange,
  type ClientMessage,
  type Hello,
  type ServerMessage,
  type Welcome,
} from './protocol.ts';

export interface ConnectionHandler {
  /** the hub accepted the Hello; `conn.hubId` is set */
  welcome(conn: HubConnection, welcome: Welcome): void;
  /** any later frame from the hub, already validated */
  message(conn: HubConnection, message: ServerMessage): void;
  /** the socket closed after a Welcome (`welcomed`) or before it */
  down(conn: HubConnection, code: number, reason: string, welcomed: boolean): void;
  /** about to retry in `delayMs` */
  reconnecting(conn: HubConnection, delayMs: number): void;
  /** a non-fatal fault: the connection recovers by itself */
  error(conn: HubConnection, error: Error): void;
  /** a fatal refusal (version, app, auth): the connection stopped for good */
  fatal(conn: HubConnection, error: HotKeyError): void;
}

export interface HubConnectionOptions {
  url: string;
  hello: Hello;
  /** ping period while connected and not quiet @default DEFAULT_CLIENT_OPTIONS.pingIntervalMs (1000) */
  pingIntervalMs?: number;
  /** ping period while quiet (`setQuiet`) @default DEFAULT_CLIENT_OPTIONS.quietPingIntervalMs (15000) */
  quietPingIntervalMs?: number;
  /** a hub silent (no pong, no frame) this long is dead: the socket is dropped @default DEFAULT_CLIENT_OPTIONS.livenessTimeoutMs (2000) */
  livenessTimeoutMs?: number;
  /** first reconnect delay cap @default DEFAULT_CLIENT_OPTIONS.reconnectMinMs (100) */
  backoffMinMs?: number;
  /** largest reconnect delay cap @default DEFAULT_CLIENT_OPTIONS.reconnectMaxMs (5000) */
  backoffMaxMs?: number;
  /** a hub that opened the socket but sent no Welcome within this is dropped @default DEFAULT_CLIENT_OPTIONS.welcomeTimeoutMs (5000) */
  welcomeTimeoutMs?: number;
  /** random source for jitter, in [0, 1) @default Math.random */
  random?: () => number;
  /** TLS options for a wss:// URL, handed to ws @default undefined (the system CAs) */
  tls?: ClientTlsOptions;
}

/** node:tls / OpenSSL error codes of a failed handshake or certificate check. */
const TLS_ERROR = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|EPROTO$)/;

/** A socket error that is the TLS handshake failing, as HK_ERR_TLS with what to do about it; else the error itself. */
export function tlsError(url: string, err: Error & { code?: string }): Error {
  if (typeof err.code !== 'string' || !TLS_ERROR.test(err.code)) return err;
  const hint = /CERT|UNABLE_TO|SELF_SIGNED|DEPTH_ZERO/.test(err.code)
    ? ": the hub's certificate is not trusted here; pass the CA that signed it as options.tls.ca"
    : err.code.startsWith('ERR_TLS_CERT_ALTNAME')
      ? ': the certificate does not name this host'
      : ': is the hub serving TLS on this port?';
  return new HotKeyError(ErrorCode.Tls, `TLS with ${url} failed: ${err.message} (${err.code})${hint}`, { cause: err });
}

export type ConnectionState = 'idle' | 'connecting' | 'handshake' | 'open' | 'waiting' | 'closed';

/** client → hub messages the hub answers (Ack, Grant, Snapshot): sending one ends a quiet spell */
const ANSWERED: ReadonlySet<number> = new Set([MsgType.InvalidateRequest, MsgType.Lease, MsgType.Resync]);

const FATAL_CODE_ERRORS: Record<number, ErrorCode> = {
  [CloseCode.Version]: ErrorCode.Version,
  [CloseCode.UnknownApp]: ErrorCode.UnknownApp,
  [CloseCode.Auth]: ErrorCode.Auth,
};

export class HubConnection {
  readonly url: string;
  /** the hub's id, known from its Welcome (kept across reconnects until a new Welcome) */
  hubId: string | undefined;
  /** protocol-level state; 'open' means the Welcome arrived */
  state: ConnectionState = 'idle';

  readonly #handler: ConnectionHandler;
  readonly #hello: Hello;
  /** a close code this side decided on (a Welcome of a version it does not speak), whatever the hub echoes */
  #refused: number | undefined;
  readonly #pingIntervalMs: number;
  readonly #quietPingIntervalMs: number;
  readonly #livenessTimeoutMs: number;
  /** the client wants nothing of this hub now (setQuiet): pings are rarer and silence longer */
  #quiet = false;
  readonly #backoffMinMs: number;
  readonly #backoffMaxMs: number;
  readonly #welcomeTimeoutMs: number;
  readonly #random: () => number;
  readonly #tls: ClientTlsOptions | undefined;

  #ws: WebSocket | undefined;
  #attempt = 0;
  #lastSeen = 0;
  #lastPing = 0;
  #pingTimer: NodeJS.Timeout | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #welcomeTimer: NodeJS.Timeout | undefined;
  #openTimer: NodeJS.Timeout | undefined;
  /** the hub's Error frame, if any, explains the close that follows it */
  #lastHubError: { code: string; message: string } | undefined;

  constructor(options: HubConnectionOptions, handler: ConnectionHandler) {
    this.url = options.url;
    this.#hello = options.hello;
    this.#handler = handler;
    const d = DEFAULT_CLIENT_OPTIONS;
    this.#pingIntervalMs = options.pingIntervalMs ?? d.pingIntervalMs;
    this.#quietPingIntervalMs = options.quietPingIntervalMs ?? d.quietPingIntervalMs;
    this.#livenessTimeoutMs = options.livenessTimeoutMs ?? d.livenessTimeoutMs;
    this.#backoffMinMs = options.backoffMinMs ?? d.reconnectMinMs;
    this.#backoffMaxMs = options.backoffMaxMs ?? d.reconnectMaxMs;
    this.#welcomeTimeoutMs = options.welcomeTimeoutMs ?? d.welcomeTimeoutMs;
    this.#random = options.random ?? Math.random;
    this.#tls = options.tls;
  }

  start(): void {
    if (this.state !== 'idle' && this.state !== 'waiting') return;
    this.#open();
  }

  /** Waiting to reconnect: try now (the hub is listed as a member again, say after a restart). */
  retryNow(): void {
    if (this.state !== 'waiting' || this.#retryTimer === undefined) return;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#open();
  }

  /** Sends a frame if the hub is welcomed; false when not sent. A request that wants an answer ends quiet. */
  send(message: ClientMessage): boolean {
    if (this.#quiet && ANSWERED.has(message.t)) this.setQuiet(false);
    return this.sendBytes(encode(message));
  }

  /**
   * Heartbeats folded into the traffic the client needs (docs/internals/holders.md §10): while
   * `quiet` — the client holds nothing this hub vouches for, asks nothing of it and waits for no
   * answer — it pings every `quietPingIntervalMs` and allows that much more silence, so an idle
   * instance costs its hub a ping now and then, not one a second. Ending quiet (a request that
   * wants an answer, or the client's tick) restarts the clock: the hub must be heard within
   * `livenessTimeoutMs` from then, and a ping goes now.
   */
  setQuiet(quiet: boolean): void {
    if (quiet === this.#quiet) return;
    this.#quiet = quiet;
    if (quiet) return;
    const now = performance.now();
    this.#lastSeen = now;
    const ws = this.#ws;
    if (this.state === 'open' && ws !== undefined && ws.readyState === WebSocket.OPEN) {
      this.#lastPing = now;
      ws.ping();
    }
  }

  sendBytes(bytes: Uint8Array): boolean {
    const ws = this.#ws;
    if (this.state !== 'open' || ws === undefined || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(bytes, { binary: true });
    return true;
  }

  /** bytes queued in the socket but not yet written (0 when not connected) */
  get bufferedAmount(): number {
    return this.#ws?.bufferedAmount ?? 0;
  }

  /** Stops for good: no more retries. */
  close(code: number = CloseCode.Normal, reason = 'client closed'): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.#clearTimers();
    const ws = this.#ws;
    this.#ws = undefined;
    if (ws !== undefined) {
      ws.removeAllListeners();
      ws.on('error', () => {}); // a late socket error after close must not crash the process
      if (ws.readyState === WebSocket.OPEN) ws.close(code, reason);
      else ws.terminate();
    }
  }

  /** Drops the socket (a protocol fault or a dead peer) and reconnects with backoff. */
  drop(code: number, reason: string): void {
    const ws = this.#ws;
    if (ws === undefined) return;
    if (ws.readyState === WebSocket.OPEN) ws.close(code, reason.slice(0, 120));
    // ws emits 'close' after the closing handshake or the terminate; a dead peer never answers
    setTimeout(() => {
      if (this.#ws === ws) ws.terminate();
    }, 500).unref();
  }

  #open(): void {
    this.state = 'connecting';
    this.#lastHubError = undefined;
    this.#refused = undefined;
    let ws: WebSocket;
    try {
      // no `handshakeTimeout`: ws would set it on the socket (socket.setTimeout), where test
      // doubles of net.Socket in the application's process take the reconnects of a hub link for
      // their own sockets; the deadline is a timer of ours (below)
      ws = new WebSocket(this.url, {
        ...this.#tls,
        perMessageDeflate: false,
        maxPayload: 4 * MAX_FRAME_BYTES,
      });
    } catch (err) {
      // a malformed URL: nothing will ever connect
      this.state = 'closed';
      this.#handler.fatal(
        this,
        new HotKeyError(ErrorCode.Config, `bad hub URL ${this.url}: ${(err as Error).message}`, { cause: err }),
      );
      return;
    }
    this.#ws = ws;
    ws.binaryType = 'nodebuffer';
    const openingMs = this.#livenessTimeoutMs + this.#pingIntervalMs;
    let timedOut = false;
    this.#openTimer = setTimeout(() => {
      this.#openTimer = undefined;
      if (this.#ws !== ws || ws.readyState !== WebSocket.CONNECTING) return;
      timedOut = true; // the error ws reports for the abort is this one
      this.#handler.error(
        this,
        new HotKeyError(ErrorCode.Timeout, `no connection to ${this.url} within ${openingMs} ms`),
      );
      ws.terminate();
    }, openingMs);
    ws.on('open', () => this.#onOpen(ws));
    ws.on('message', (data, isBinary) => this.#onMessage(ws, data as Buffer, isBinary));
    ws.on('pong', () => {
      this.#lastSeen = performance.now();
    });
    // the hub's own ping (every 15 s) proves it alive as well as a pong would
    ws.on('ping', () => {
      this.#lastSeen = performance.now();
    });
    ws.on('error', (err) => {
      if (this.#ws === ws && !timedOut) this.#handler.error(this, tlsError(this.url, err));
    });
    ws.on('close', (code, reason) => this.#onClose(ws, code, reason.toString()));
  }

  #onOpen(ws: WebSocket): void {
    if (this.#ws !== ws) return;
    clearTimeout(this.#openTimer);
    this.#openTimer = undefined;
    this.state = 'handshake';
    this.#lastSeen = performance.now();
    ws.send(encode(this.#hello), { binary: true });
    this.#welcomeTimer = setTimeout(() => {
      this.#handler.error(
        this,
        new HotKeyError(ErrorCode.Timeout, `no Welcome from ${this.url} within ${this.#welcomeTimeoutMs} ms`),
      );
      this.drop(CloseCode.Normal, 'no welcome');
    }, this.#welcomeTimeoutMs);
    this.#lastPing = this.#lastSeen;
    // check more often than we ping, so a dead hub is noticed soon after the timeout, not a ping later
    this.#pingTimer = setInterval(
      () => this.#checkLiveness(ws),
      Math.max(10, Math.min(this.#pingIntervalMs, this.#livenessTimeoutMs / 4)),
    );
  }

  #checkLiveness(ws: WebSocket): void {
    if (this.#ws !== ws) return;
    const period = this.#quiet ? this.#quietPingIntervalMs : this.#pingIntervalMs;
    const silence = performance.now() - this.#lastSeen;
    if (silence > (this.#quiet ? period : 0) + this.#livenessTimeoutMs) {
      this.#handler.error(
        this,
        new HotKeyError(ErrorCode.Timeout, `hub ${this.hubId ?? this.url} silent for over ${Math.floor(silence)} ms`),
      );
      // a dead peer never completes a closing handshake: cut the socket now
      ws.terminate();
      return;
    }
    // a frame heard within the period (a Grant, a broadcast) proves the hub alive: no ping then
    const now = performance.now();
    if (now - this.#lastPing >= period && silence >= period && ws.readyState === WebSocket.OPEN) {
      this.#lastPing = now;
      ws.ping();
    }
  }

  #onMessage(ws: WebSocket, data: Buffer, isBinary: boolean): void {
    if (this.#ws !== ws) return;
    this.#lastSeen = performance.now();
    let message: ServerMessage;
    try {
      if (!isBinary) throw new ProtocolError(ErrorCode.Protocol, 'text frame from hub', CloseCode.Protocol);
      message = decodeServerMessage(data);
    } catch (err) {
      // A frame we cannot read may have been a broadcast: reconnect and resync from scratch.
      const error = err instanceof Error ? err : new Error(String(err));
      this.#handler.error(this, error);
      this.drop(closeCodeOf(err) ?? CloseCode.Protocol, error.message);
      return;
    }
    if (message.t === MsgType.Error) {
      this.#lastHubError = { code: message.code, message: message.message };
      return;
    }
    if (this.state === 'handshake') {
      if (message.t !== MsgType.Welcome) {
        this.#handler.error(
          this,
          new ProtocolError(ErrorCode.Protocol, `expected Welcome, got message type ${message.t}`, CloseCode.Protocol),
        );
        this.drop(CloseCode.Protocol, 'expected welcome');
        return;
      }
      const [lo, hi] = offeredRange(this.#hello);
      if (message.v < lo || message.v > hi) {
        // the hub picked a version this client does not speak: as fatal as its own 4001
        const text = `hub ${this.url} welcomed protocol version ${message.v}; this client speaks ${describeRange(lo, hi)}`;
        this.#lastHubError = { code: ErrorCode.Version, message: text };
        this.#refused = CloseCode.Version;
        this.drop(CloseCode.Version, text);
        return;
      }
      clearTimeout(this.#welcomeTimer);
      this.#welcomeTimer = undefined;
      this.state = 'open';
      this.#attempt = 0;
      this.hubId = message.hub;
      this.#handler.welcome(this, message);
      return;
    }
    if (this.state === 'open') this.#handler.message(this, message);
  }

  #onClose(ws: WebSocket, code: number, reason: string): void {
    if (this.#ws !== ws) return;
    this.#ws = undefined;
    this.#clearTimers();
    const welcomed = this.state === 'open';
    const hubError = this.#lastHubError;
    if (this.state === 'closed') return;
    this.state = 'waiting';
    this.#handler.down(this, code, reason || hubError?.message || '', welcomed);
    if (this.#refused !== undefined) code = this.#refused;
    if (FATAL_CLOSE_CODES.has(code)) {
      this.state = 'closed';
      const errCode = FATAL_CODE_ERRORS[code] ?? ErrorCode.Protocol;
      const message = `hub ${this.url} refused the connection: ${hubError?.message || reason || errCode} (close ${code})`;
      this.#handler.fatal(
        this,
        errCode === ErrorCode.Auth ? new AuthError(message, code) : new HotKeyError(errCode, message),
      );
      return;
    }
    // full jitter over a capped exponential ceiling, never under the floor
    const ceiling = Math.min(this.#backoffMaxMs, this.#backoffMinMs * 2 ** Math.min(this.#attempt, 30));
    const delayMs = Math.max(this.#backoffMinMs, Math.floor(this.#random() * ceiling));
    this.#attempt++;
    this.#handler.reconnecting(this, delayMs);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      if (this.state === 'waiting') this.#open();
    }, delayMs);
  }

  #clearTimers(): void {
    clearInterval(this.#pingTimer);
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#welcomeTimer);
    clearTimeout(this.#openTimer);
    this.#pingTimer = undefined;
    this.#retryTimer = undefined;
    this.#welcomeTimer = undefined;
    this.#openTimer = undefined;
  }
}
