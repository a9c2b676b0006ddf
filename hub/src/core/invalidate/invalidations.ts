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
 * waiter passed by lease lapse stays passed: the hub grants no lease to a session that lags
 * behind an invalidation broadcast more than `graceMs` ago (`blocks`), so a partitioned session
 * cannot keep renewing (a one-way partition, or a session that stopped applying) and a lapsed
 * lease is not renewed under the head's feet. A healthy session lags only for its round trip, so
 * under a steady stream of writes it is still renewed. The wait for an instance that does not
 * apply is therefore at most graceMs + the lease.
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
  /** a session lagging behind an invalidation older than this gets no lease renewal @default 250 */
  graceMs?: number;
}

export class InvalidationTracker {
  readonly #maxPending: number;
  readonly #notBefore: number;
  readonly #graceMs: number;
  #queue: Pending[] = [];
  #head = 0;
  /** invalidations dropped unacknowledged (over maxPending, or hub shutdown) */
  dropped = 0;

  constructor(options: InvalidationTrackerOptions = {}) {
    this.#maxPending = options.maxPending ?? 100_000;
    this.#notBefore = options.notBefore ?? 0;
    this.#graceMs = options.graceMs ?? 250;
  }

  get pending(): number {
    return this.#queue.length - this.#head;
  }

  /**
   * True when a session that applied up to `appliedSeq` must not get a lease at `now`: the oldest
   * pending invalidation it has not applied was tracked over `graceMs` ago (renewing it would let
   * a partitioned instance hold acks off for ever).
   */
  blocks(appliedSeq: number, now: number): boolean {
    const since = this.lagSince(appliedSeq);
    return since !== undefined && now - since >= this.#graceMs;
  }

  /** When the oldest pending invalidation a session that applied up to `appliedSeq` lacks was tracked; undefined: it lacks none. */
  lagSince(appliedSeq: number): number | undefined {
    const q = this.#queue;
    let lo = this.#head;
    let hi = q.length;
    // seqs grow along the queue: the first entry the session has not applied
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (q[mid]!.seq <= appliedSeq) lo = mid + 1;
      else hi = mid;
    }
    return lo < q.length ? q[lo]!.at : undefined;
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
          // named only if its lease ran when this was tracked. One that had lapsed by then (or was
          // never granted) could serve nothing, and a lease it gets later comes with a Grant sent
          // after this broadcast, which it applies first: it can serve nothing this invalidates
          if (waiter.leaseUntil > oldest.at) (oldest.fenced ??= []).push(waiter.instance);
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
