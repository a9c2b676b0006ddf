/**
 * The hub's WebSocket heartbeat, spread over the interval. Pinging every socket in one round
 * blocks the event loop for the whole round (every socket's ping write, then every pong to
 * read) once per interval: a promotion or an invalidation arriving then waits behind it. Here
 * the sockets are dealt round-robin into SLICES groups and one group is pinged
 * every `intervalMs / SLICES`, so each socket is still pinged once per interval and a round costs
 * 1/SLICES of pinging every socket at once.
 *
 * A socket pinged and not heard from (pong or any frame) by its next turn is a peer that vanished
 * without a FIN: it is dropped then, one interval after the unanswered ping.
 */

/** What the heartbeat needs of a socket (a ws WebSocket has all of it). */
export interface Pingable {
  ping(): void;
  terminate(): void;
}

/** groups the sockets are dealt into: one is pinged per intervalMs / SLICES */
export const HEARTBEAT_SLICES = 16;

export class Heartbeat<S extends Pingable> {
  readonly #groups: Set<S>[] = Array.from({ length: HEARTBEAT_SLICES }, () => new Set<S>());
  readonly #groupOf = new Map<S, Set<S>>();
  /** pinged and not heard from since */
  readonly #unanswered = new WeakSet<S>();
  readonly #timer: NodeJS.Timeout;
  #dealt = 0;
  #turn = 0;

  /** @param intervalMs how often each socket is pinged (the hub's `pingIntervalMs` tunable) */
  constructor(intervalMs: number) {
    this.#timer = setInterval(() => this.tick(), Math.max(1, intervalMs / HEARTBEAT_SLICES));
    this.#timer.unref();
  }

  /** A socket opened: it is pinged from its group's next turn on. */
  add(socket: S): void {
    if (this.#groupOf.has(socket)) return;
    const group = this.#groups[this.#dealt++ % HEARTBEAT_SLICES]!;
    group.add(socket);
    this.#groupOf.set(socket, group);
  }

  /** A pong or a frame arrived: the peer is alive. */
  heard(socket: S): void {
    this.#unanswered.delete(socket);
  }

  /** A socket closed. */
  remove(socket: S): void {
    this.#groupOf.get(socket)?.delete(socket);
    this.#groupOf.delete(socket);
  }

  /** One group's turn (the timer calls it; exposed for tests). */
  tick(): void {
    const group = this.#groups[this.#turn++ % HEARTBEAT_SLICES]!;
    for (const socket of group) {
      if (this.#unanswered.has(socket)) {
        this.remove(socket);
        socket.terminate(); // emits 'close': the session leaves its app
        continue;
      }
      this.#unanswered.add(socket);
      try {
        socket.ping();
      } catch {
        // not open yet or already closing
      }
    }
  }

  /** sockets under watch */
  get size(): number {
    return this.#groupOf.size;
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
