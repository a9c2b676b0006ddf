/**
 * Acks for invalidations: the writer's InvalidateRequest is acknowledged once every SDK session that
 * was connected when the Invalidate was broadcast has reported Applied{seq' >= seq} or closed, or
 * once the timeout passes, whichever is first.
 *
 * Cheap at high rates: within an app seqs grow and each session's applied seq only grows, so a
 * later pending invalidation can never complete before an earlier one (its waiters are a superset,
 * minus closed sessions). Pending entries therefore form a FIFO; only the head is checked, with a
 * cursor that moves past satisfied waiters once each. Deadlines are checked by `expire(now)`, which
 * the hub calls every tick (so an ack on timeout is late by at most one tick); no timers here.
 * Consecutive entries share one waiter array while the app's sessions do not change.
 */

export interface Waiter {
  /** highest seq the session has applied */
  appliedSeq: number;
  closed: boolean;
}

interface Pending {
  seq: number;
  waiters: readonly Waiter[];
  cursor: number;
  deadline: number;
  done: (timedOut: boolean) => void;
}

export interface InvalidationTrackerOptions {
  /** ack after this long even if some SDK has not applied @default 1000 */
  timeoutMs?: number;
  /** pending acks kept at most; beyond it the oldest is acked early (counted as a timeout) @default 100000 */
  maxPending?: number;
}

export class InvalidationTracker {
  readonly #timeoutMs: number;
  readonly #maxPending: number;
  #queue: Pending[] = [];
  #head = 0;

  constructor(options: InvalidationTrackerOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? 1000;
    this.#maxPending = options.maxPending ?? 100_000;
  }

  get pending(): number {
    return this.#queue.length - this.#head;
  }

  /** Waits for `waiters` to apply `seq`; `done(timedOut)` is called exactly once. */
  track(seq: number, waiters: readonly Waiter[], now: number, done: (timedOut: boolean) => void): void {
    this.#queue.push({ seq, waiters, cursor: 0, deadline: now + this.#timeoutMs, done });
    while (this.pending > this.#maxPending) this.#finishHead(true);
    this.settle();
  }

  /** Re-checks after a session applied something or closed. */
  settle(): void {
    while (this.pending > 0) {
      const oldest = this.#queue[this.#head]!;
      while (oldest.cursor < oldest.waiters.length) {
        const waiter = oldest.waiters[oldest.cursor]!;
        if (!waiter.closed && waiter.appliedSeq < oldest.seq) break;
        oldest.cursor++;
      }
      if (oldest.cursor < oldest.waiters.length) break;
      this.#finishHead(false);
    }
  }

  /** Acks, as timed out, every pending invalidation whose deadline has passed. */
  expire(now: number): void {
    while (this.pending > 0 && this.#queue[this.#head]!.deadline <= now) this.#finishHead(true);
  }

  /** Acks everything still pending (hub shutdown). */
  flush(): void {
    while (this.pending > 0) this.#finishHead(true);
  }

  #finishHead(timedOut: boolean): void {
    const oldest = this.#queue[this.#head]!;
    this.#queue[this.#head] = undefined as never;
    this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    try {
      oldest.done(timedOut);
    } catch {
      // the requester's socket may be gone: nothing else depends on this ack
    }
  }
}
