/**
 * The sending side of one client connection, as the hub core sees it. A `ws` WebSocket satisfies
 * it directly; keeping the core on this interface keeps `ws` inside the socket adapter.
 */
export interface Peer {
  send(data: Uint8Array): void;
  close(code: number, reason: string): void;
  /** bytes queued but not yet written to the network */
  readonly bufferedAmount: number;
}
