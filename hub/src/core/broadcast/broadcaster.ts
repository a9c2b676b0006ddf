/**
 * Per-app fan-out. Every broadcast gets the app's next seq, is encoded ONCE and the same bytes are
 * written to every SDK socket of the app; the socket adapter also frames it once (Peer.sendBroadcast:
 * one prebuilt WebSocket frame, one socket write each, no per-socket framing or allocation). A socket whose send buffer is over `maxBufferedBytes` is
 * closed with 4008 (slow consumer) instead of silently missing frames: the SDK reconnects and
 * resynchronises from a Snapshot, so no broadcast is ever lost without the SDK knowing.
 *
 * Bursts: one report can promote many keys at once (a sale opens), one tick can demote many, and
 * a write per socket per broadcast is a syscall each. So the first broadcast of an event-loop turn
 * goes out at once; from the second on, every peer is corked, and the rest of the burst (with any
 * reply written to a peer meanwhile, in order) leaves in one writev per socket when the turn's
 * synchronous work ends (process.nextTick). A lone broadcast costs what it always did.
 */
import {
  CloseCode,
  encode,
  type Demote,
  type Invalidate,
  type Promote,
  type ServerMessage,
} from '@hotkey/sdk/protocol';
import type { BulkWriter, Peer, BroadcastFrame } from '../peer.ts';

type Sequenced = Omit<Promote, 'seq'> | Omit<Invalidate, 'seq'> | Omit<Demote, 'seq'>;

/** a reply up to this size is framed whole and copied into one buffer (`sendTo`); a larger one is not copied */
const SMALL_REPLY_BYTES = 1024;

export interface BroadcasterOptions {
  /** send-buffer bytes above which a socket is cut off as a slow consumer (the hub's `maxBufferedBytes` tunable) */
  maxBufferedBytes: number;
  /** called once per socket cut off */
  onSlowConsumer?: (peer: Peer) => void;
  /** called when writing to a socket throws (the socket is then closed with CloseCode.InternalError) */
  onSendError?: (peer: Peer, err: unknown) => void;
  /** writes big fan-outs with other threads' help (the socket adapter's FanoutThreads); none: all on this thread */
  bulk?: BulkWriter;
}

export class Broadcaster {
  readonly peers = new Set<Peer>();
  readonly #maxBuffered: number;
  readonly #onSlow: ((peer: Peer) => void) | undefined;
  readonly #onSendError: ((peer: Peer, err: unknown) => void) | undefined;
  readonly #bulk: BulkWriter | undefined;
  #seq = 0;
  /** broadcasts sent in this event-loop turn (reset by #endBurst) */
  #burst = 0;
  /** peers corked by this turn's burst, uncorked by #endBurst */
  #corked: Peer[] = [];
  readonly #endBurst = (): void => {
    this.#burst = 0;
    if (this.#corked.length === 0) return;
    const corked = this.#corked;
    this.#corked = [];
    for (const peer of corked) peer.uncork!();
  };

  constructor(options: BroadcasterOptions) {
    this.#maxBuffered = options.maxBufferedBytes;
    this.#onSlow = options.onSlowConsumer;
    this.#onSendError = options.onSendError;
    this.#bulk = options.bulk;
  }

  /** seq of the last sequenced broadcast */
  get seq(): number {
    return this.#seq;
  }

  /** Numbers the message with the next seq and sends it to every peer; returns the seq. */
  broadcast(message: Sequenced): number {
    const seq = ++this.#seq;
    this.sendAll({ ...message, seq } as ServerMessage);
    return seq;
  }

  /** Peers of sessions speaking protocol version 1, which cannot read what `sendCurrent` sends (legacy-sessions.ts). */
  readonly legacy = new Set<Peer>();

  /** Sends an unsequenced message of a type version 1 lacks (Value) to every peer but the legacy ones. */
  sendCurrent(message: ServerMessage): void {
    if (this.legacy.size === 0) return this.sendAll(message);
    const bytes = encode(message);
    for (const peer of this.peers) if (!this.legacy.has(peer)) this.sendTo(peer, bytes);
  }

  /** Sends an unsequenced message (Config, Members) to every peer. */
  sendAll(message: ServerMessage): void {
    if (this.peers.size === 0) return;
    this.sendBroadcast(encode(message));
  }

  /** Sends pre-encoded bytes to every peer, framed once for all of them (Peer.sendBroadcast). */
  sendBroadcast(bytes: Uint8Array): void {
    if (this.#burst++ === 0) process.nextTick(this.#endBurst);
    else if (this.#burst === 2) {
      for (const peer of this.peers) {
        if (peer.cork === undefined || peer.uncork === undefined) continue;
        peer.cork();
        this.#corked.push(peer);
      }
    }
    const frame: BroadcastFrame = { payload: bytes };
    const bulk = this.#bulk;
    // corked peers (a burst) buffer their writes anyway: no hand-over
    if (bulk === undefined || this.peers.size < bulk.minPeers || this.#corked.length > 0) {
      for (const peer of this.peers) this.sendTo(peer, bytes, frame);
      return;
    }
    const admitted: Peer[] = [];
    for (const peer of this.peers) if (this.#admit(peer)) admitted.push(peer);
    try {
      for (const peer of bulk.begin(frame, admitted)) this.#write(peer, bytes, frame);
    } finally {
      bulk.end();
    }
  }

  /**
   * Sends pre-encoded bytes to one peer unless it is over its buffer limit (then cuts it off).
   * A small reply (an Ack, a Grant, a Held, a Drop) goes out as one frame too, built here: one
   * buffer and one plain socket write, where the socket's own framing would allocate a header,
   * cork, write twice and uncork into a writev for every reply. A large one keeps that path, which
   * writes the payload without copying it.
   * @param [frame] the same bytes as one frame for a whole fan-out
   */
  sendTo(peer: Peer, bytes: Uint8Array, frame?: BroadcastFrame): boolean {
    if (frame === undefined && bytes.byteLength <= SMALL_REPLY_BYTES) frame = { payload: bytes };
    return this.#admit(peer) && this.#write(peer, bytes, frame);
  }

  /** false (and the peer cut off) when its send buffer is over the limit */
  #admit(peer: Peer): boolean {
    if (peer.bufferedAmount <= this.#maxBuffered) return true;
    this.peers.delete(peer);
    this.#onSlow?.(peer);
    peer.close(CloseCode.SlowConsumer, 'slow consumer: send buffer full, reconnect and resync');
    return false;
  }

  #write(peer: Peer, bytes: Uint8Array, frame?: BroadcastFrame): boolean {
    try {
      if (frame !== undefined && peer.sendBroadcast !== undefined) peer.sendBroadcast(frame);
      else peer.send(bytes);
    } catch (err) {
      // one broken socket must not stop the fan-out to the others
      this.peers.delete(peer);
      this.#onSendError?.(peer, err);
      try {
        peer.close(CloseCode.InternalError, 'internal hub error');
      } catch {
        // already gone
      }
      return false;
    }
    return true;
  }
}
