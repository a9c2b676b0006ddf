/**
 * The page's WebSocket to the hub's `/live` feed. The token goes in the first frame (Hello with
 * role 'dashboard'), never in the URL, so it shows up in no access log. Reconnects with capped,
 * jittered backoff, except after an auth refusal: then it waits for the user to give a token.
 */
import { ErrorCode } from '@hotkey/sdk/errors';
import { CloseCode, encode, MsgType, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';
import { decodeFeedMessage, type FeedMessage } from '@hotkey/sdk/feed-protocol';
import { readToken } from './token-store.ts';

export type LiveState =
  | { type: 'connecting' }
  | { type: 'live'; hub: string }
  | { type: 'down'; retryInMs: number; reason: string }
  | { type: 'auth'; message: string };

/**
 * @param [minBackoffMs=500] first reconnect delay
 * @param [maxBackoffMs=5000] longest reconnect delay
 */
export interface LiveOptions {
  onFrame: (msg: FeedMessage) => void;
  onState: (state: LiveState) => void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

const INSTANCE = `dashboard-${Math.random().toString(36).slice(2, 10)}`;

export class LiveConnection {
  readonly #opts: Required<LiveOptions>;
  #ws: WebSocket | undefined;
  #attempt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(opts: LiveOptions) {
    this.#opts = { minBackoffMs: 500, maxBackoffMs: 5000, ...opts };
  }

  /** (Re)connects now, e.g. after the user typed a token. */
  connect(): void {
    clearTimeout(this.#timer);
    this.#ws?.close(CloseCode.Normal);
    this.#closed = false;
    this.#opts.onState({ type: 'connecting' });
    const url = new URL('/live', location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(url);
    ws.binaryType = 'arraybuffer';
    this.#ws = ws;
    let authError = '';
    ws.onopen = () => {
      ws.send(
        encode({
          t: MsgType.Hello,
          v: PROTOCOL_VERSION,
          app: '*',
          token: readToken(),
          instance: INSTANCE,
          sdk: 'dashboard/0.1.0',
          role: 'dashboard',
        }),
      );
    };
    ws.onmessage = (ev) => {
      if (!(ev.data instanceof ArrayBuffer)) return;
      let msg: FeedMessage;
      try {
        msg = decodeFeedMessage(new Uint8Array(ev.data));
      } catch (err) {
        console.warn('hotkey: dropped a bad feed frame:', (err as Error).message);
        return;
      }
      if (msg.t === MsgType.FeedSnapshot) {
        this.#attempt = 0;
        this.#opts.onState({ type: 'live', hub: msg.hub });
      }
      if (msg.t === MsgType.Error && msg.code === ErrorCode.Auth) authError = msg.message;
      this.#opts.onFrame(msg);
    };
    ws.onclose = (ev) => {
      if (this.#ws !== ws || this.#closed) return;
      if (ev.code === CloseCode.Auth) {
        this.#opts.onState({ type: 'auth', message: authError || ev.reason || 'the hub wants a dashboard token' });
        return;
      }
      const base = Math.min(this.#opts.maxBackoffMs, this.#opts.minBackoffMs * 2 ** this.#attempt++);
      const retryInMs = Math.round(base * (0.5 + Math.random() / 2));
      this.#opts.onState({ type: 'down', retryInMs, reason: ev.reason || `closed (${ev.code})` });
      this.#timer = setTimeout(() => this.connect(), retryInMs);
    };
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#ws?.close(CloseCode.Normal);
  }
}
