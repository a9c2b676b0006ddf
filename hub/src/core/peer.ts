/**
 * The sending side of one client connection, as the hub core sees it. A `ws` WebSocket satisfies
 * it directly; keeping the core on this interface keeps `ws` inside the socket adapter.
 */
export interface Peer {
  send(data: Uint8Array): void;
  /**
   * Sends a frame encoded once for many peers (a broadcast): the socket adapter frames it once
   * for all of them and writes those bytes as they are, instead of framing it again per socket.
   * The Broadcaster sends a small reply to one peer this way too: one buffer, one write.
   * Optional: without it the payload goes through `send`.
   */
  sendBroadcast?(frame: BroadcastFrame): void;
  close(code: number, reason: string): void;
  /** bytes queued but not yet written to the network */
  readonly bufferedAmount: number;
  /**
   * Buffer writes until `uncork` (Broadcaster: the broadcasts after the first in one event-loop
   * turn leave in one write); calls nest. Optional, both or neither.
   */
  cork?(): void;
  uncork?(): void;
  /** stop / restart reading from the connection (the fair intake's backpressure); a ws WebSocket has both */
  pause?(): void;
  resume?(): void;
}

/**
 * Writes one broadcast to many peers with other threads' help (the socket adapter's
 * fanout-threads.ts). `begin` takes the peers it can write and returns the rest, which the caller
 * writes meanwhile; `end` (always called after `begin`) waits until every taken peer has it.
 */
export interface BulkWriter {
  /** fan-outs to fewer peers are not worth a hand-over */
  readonly minPeers: number;
  begin(frame: BroadcastFrame, peers: readonly Peer[]): readonly Peer[];
  end(): void;
}

/** One broadcast's payload, plus whatever the socket adapter caches for it (its wire form). */
export interface BroadcastFrame {
  readonly payload: Uint8Array;
  /** the adapter's cache: set by the first peer that writes the frame */
  wire?: Uint8Array;
}

/** The WebSocket limit on a close reason, in bytes of UTF-8 (RFC 6455 §5.5: 125 minus the code). */
const MAX_CLOSE_REASON_BYTES = 123;

/** `text` cut to fit a close frame, on a character boundary; every close with a message goes through it. */
export function closeReason(text: string): string {
  let out = text.slice(0, MAX_CLOSE_REASON_BYTES);
  while (Buffer.byteLength(out) > MAX_CLOSE_REASON_BYTES) out = out.slice(0, -1);
  return out;
}
