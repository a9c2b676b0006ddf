/**
 * Acks for invalidations, bounded by leases. An SDK serves a hub's cached values only while its
 * lease from that hub is current, and its view of the lease ends before the hub's (the SDK
 * measures from when it sent the request, the hub from when it received it). So the writer's
 * InvalidateRequest is acknowledged once every waiter — each SDK session that was connected when
 * the Invalidate was broadcast, and each closed one whose lease may still run — has either
 * reported Applied{seq' >= seq} or had its lease lapse on the hub's clock (it is *fenced*: it can
 * no longer serve the old value; the ack names it). A closed socket proves nothing: the instance
 * behind it may still serve until its lease lapses. There is no ack on a plain timeout: the lease
 * bounds the wait. A hub that just started acks nothing before `notBefore` (its start plus one
 * lease): instances may hold leases granted by its previous life.
 *
 * Cheap at high rates: within an app seqs grow and each session's applied seq only grows, so a
 * later pending invalidation can never complete before an earlier one. Pending entries form a
 * FIFO; only the head is checked, with a cursor that moves past satisfied waiters once each. A
 * waiter passed by lease lapse stays passed: the hub grants no lease to a session that has not
 * applied the head's seq (`blocks`), so a lapsed lease is not renewed under the head's feet.
 * Time is the caller's monotonic clock, passed in; no timers here (`settle(now)` runs each tick).
 * Consecutive entries share one waiter array while the app's sessions do not change.
 */

export interface Waiter {
  /** highest seq the session has applied */
  appliedSeq: number;
  /** hub-clock time its lease ends (its last granted request's arrival + leaseMs); 0: never granted */
  leaseUntil: number;
  /** the SDK instance id, named in the ack when fenced */
  instance: string;
}

/** What an ack says: who was fenced, and how long it took. */
export interface AckResult {
  fenced: string[];
  /** ms from the request to the ack */
  ms: number;
}

interface Pending {
  seq: number;
  waiters: readonly Waiter[];
  cursor: number;
  fenced: string[] | undefined;
  at: number;
  /** called once: with the result when acked, undefined when dropped unacknowledged */
  done: (result: AckResult | undefined) => void;
}

export interface InvalidationTrackerOptions {
  /** pending acks kept at most; beyond it the oldest is dropped WITHOUT an ack (its writer times out) @default 100000 */
  maxPending?: number;
  /** no ack before this time (hub start + one lease) @default 0 */
  notBefore?: number;
}

export class InvalidationTracker {
  readonly #maxPending: number;
  readonly #notBefore: number;
  #queue: Pending[] = [];
  #head = 0;
  /** invalidations dropped unacknowledged (over maxPending, or hub shutdown) */
  dropped = 0;

  constructor(options: InvalidationTrackerOptions = {}) {
    this.#maxPending = options.maxPending ?? 100_000;
    this.#notBefore = options.notBefore ?? 0;
  }

  get pending(): number {
    return this.#queue.length - this.#head;
  }

  /**
   * True when `session` must not get a lease now: it has not applied the oldest invalidation
   * still waiting (renewing it would let a partitioned instance hold the ack off for ever).
   */
  blocks(appliedSeq: number): boolean {
    return this.pending > 0 && appliedSeq < this.#queue[this.#head]!.seq;
  }

  /** Waits for `waiters` to apply `seq` or be fenced; `done` is called exactly once. */
  track(seq: number, waiters: readonly Waiter[], now: number, done: (result: AckResult | undefined) => void): void {
    this.#queue.push({ seq, waiters, cursor: 0, fenced: undefined, at: now, done });
    while (this.pending > this.#maxPending) this.#finishHead(undefined);
    this.settle(now);
  }

  /** Re-checks after a session applied something, or as time passes (leases lapse). */
  settle(now: number): void {
    if (now < this.#notBefore) return;
    while (this.pending > 0) {
      const oldest = this.#queue[this.#head]!;
      while (oldest.cursor < oldest.waiters.length) {
        const waiter = oldest.waiters[oldest.cursor]!;
        if (waiter.appliedSeq < oldest.seq) {
          if (now < waiter.leaseUntil) break;
          // never granted a lease: it could serve nothing, so it is not named
          if (waiter.leaseUntil > 0) (oldest.fenced ??= []).push(waiter.instance);
        }
        oldest.cursor++;
      }
      if (oldest.cursor < oldest.waiters.length) break;
      this.#finishHead({ fenced: oldest.fenced === undefined ? [] : [...new Set(oldest.fenced)], ms: now - oldest.at });
    }
  }

  /** Drops everything still pending without an ack (hub shutdown): an ack would be a guess. */
  flush(): void {
    while (this.pending > 0) this.#finishHead(undefined);
  }

  #finishHead(result: AckResult | undefined): void {
    const oldest = this.#queue[this.#head]!;
    this.#queue[this.#head] = undefined as never;
    this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    if (result === undefined) this.dropped++;
    try {
      oldest.done(result);
    } catch {
      // the requester's socket may be gone: nothing else depends on this ack
    }
  }
}
