/**
 * Acks for directed invalidations (protocol 3): an invalidation sent as Drops to a key's holders
 * is acknowledged once each waiter applied its Drop (`Applied.d`) or had its lease lapse on the
 * hub's clock (fenced, named in the ack) — the lease rule of invalidations.ts, for the holders
 * only. Audiences differ per key, so acks complete in any order: a write nobody holds is acked at
 * once while another waits on a frozen holder.
 *
 * Each session keeps a FIFO of the waits it is part of, in the order its Drops were sent (a
 * lingering, closed session gets no Drop: its waits end only when its lease lapses). `applied`
 * pops the head while covered; `settle` pops every wait of a session whose lease lapsed. A session
 * whose oldest wait is older than `graceMs` gets no lease renewal (`blocks`), so a partitioned
 * holder cannot keep an ack waiting: the wait is at most graceMs + the lease.
 *
 * A Drop ends the registration it answers, and a holder sent a Drop of a key it has not applied
 * yet may still serve the key until it does: a later write of the key waits for that same Drop
 * (`outstanding`) instead of sending another, so a flood of writes to one key costs one Drop per
 * holder per round trip. Time is the caller's monotonic clock; no timers here.
 */
import type { AckResult, Waiter } from './invalidations.ts';

/** A session as the tracker sees it (Session implements it). */
export interface DropWaiter extends Waiter {
  readonly closed: boolean;
  /** the `d` of the last Drop sent on this connection */
  dropsSent: number;
  /** the highest `Applied.d` received */
  dropsApplied: number;
  /** the waits it is part of, oldest first (undefined: none yet) */
  dropWaits: DropWait[] | undefined;
}

interface Pending {
  waiting: number;
  fenced: string[] | undefined;
  at: number;
  done: (result: AckResult | undefined) => void;
}

interface DropWait {
  /** the Drop that ends it; Infinity: only the lease lapsing does (a closed session) */
  d: number;
  key: string;
  pending: Pending;
}

export interface DropTrackerOptions {
  /** no ack before this (hub start + one lease) @default 0 */
  notBefore?: number;
  /** a session whose oldest wait is older than this gets no lease renewal @default 250 */
  graceMs?: number;
  /** directed invalidations waiting at most; past it a new one is dropped WITHOUT an ack (its writer times out) @default 100000 */
  maxPending?: number;
}

export class DropTracker<S extends DropWaiter = DropWaiter> {
  readonly #notBefore: number;
  readonly #graceMs: number;
  readonly #maxPending: number;
  /** sessions with waits */
  readonly #lagging = new Set<S>();
  /** per key, the holders sent a Drop of it not applied yet, with its `d` */
  readonly #outstanding = new Map<string, Map<S, number>>();
  /** done before `notBefore`: acked at the first settle after it */
  #early: { pending: Pending; at: number }[] = [];
  #pending = 0;
  /** directed invalidations dropped unacknowledged (over maxPending, or hub shutdown) */
  dropped = 0;

  constructor(options: DropTrackerOptions = {}) {
    this.#notBefore = options.notBefore ?? 0;
    this.#graceMs = options.graceMs ?? 250;
    this.#maxPending = options.maxPending ?? 100_000;
  }

  get pending(): number {
    return this.#pending;
  }

  /** `session` was sent Drop `d` of `key`: later writes of the key wait for it until applied. */
  sent(session: S, key: string, d: number): void {
    let m = this.#outstanding.get(key);
    if (m === undefined) this.#outstanding.set(key, (m = new Map()));
    m.set(session, d);
  }

  /** The holders sent a Drop of `key` they have not applied yet, with its `d`. */
  outstanding(key: string): ReadonlyMap<S, number> | undefined {
    return this.#outstanding.get(key);
  }

  /**
   * Waits for each `[session, d]` to apply Drop `d` (Infinity: its lease to lapse) or be fenced;
   * `done` is called exactly once (undefined: dropped unacknowledged). Sessions whose lease
   * lapsed before now are no waiters: a Grant that renews them comes after the Drop.
   */
  track(
    key: string,
    waits: readonly (readonly [S, number])[],
    now: number,
    done: (r: AckResult | undefined) => void,
  ): void {
    const pending: Pending = { waiting: 0, fenced: undefined, at: now, done };
    this.#pending++;
    if (this.#pending > this.#maxPending) return this.#finish(pending, undefined);
    for (const [session, d] of waits) {
      if (!(session.leaseUntil > now) || d <= session.dropsApplied) continue;
      pending.waiting++;
      (session.dropWaits ??= []).push({ d, key, pending });
      this.#lagging.add(session);
    }
    if (pending.waiting === 0) this.#complete(pending, now);
  }

  /** `session` applied every Drop up to `d`. */
  applied(session: S, d: number, now: number): void {
    if (d <= session.dropsApplied) return;
    session.dropsApplied = d;
    const waits = session.dropWaits;
    if (waits === undefined) return;
    while (waits.length > 0 && waits[0]!.d <= d) this.#pop(session, waits.shift()!, now, false);
    if (waits.length === 0) this.#lagging.delete(session);
  }

  /** As time passes: sessions whose lease lapsed are fenced from all their waits; early acks go out. */
  settle(now: number): void {
    for (const session of this.#lagging) {
      if (session.leaseUntil > now) continue;
      const waits = session.dropWaits!;
      while (waits.length > 0) this.#pop(session, waits.shift()!, now, true);
      this.#lagging.delete(session);
    }
    if (this.#early.length > 0 && now >= this.#notBefore) {
      const early = this.#early;
      this.#early = [];
      for (const e of early) this.#finish(e.pending, { fenced: fencedOf(e.pending), ms: now - e.pending.at });
    }
  }

  /** True when `session` must get no lease at `now`: its oldest wait began over `graceMs` ago. */
  blocks(session: S, now: number): boolean {
    const head = session.dropWaits?.[0];
    return head !== undefined && now - head.pending.at >= this.#graceMs;
  }

  /** Drops everything pending without an ack (hub shutdown). */
  flush(): void {
    const seen = new Set<Pending>();
    for (const session of this.#lagging) {
      for (const w of session.dropWaits!) seen.add(w.pending);
      session.dropWaits = [];
    }
    this.#lagging.clear();
    for (const e of this.#early) seen.add(e.pending);
    this.#early = [];
    for (const p of seen) if (p.waiting >= 0) this.#finish(p, undefined);
  }

  #pop(session: S, wait: DropWait, now: number, lapsed: boolean): void {
    const m = this.#outstanding.get(wait.key);
    if (m !== undefined && m.get(session) === wait.d) {
      m.delete(session);
      if (m.size === 0) this.#outstanding.delete(wait.key);
    }
    const p = wait.pending;
    // named only if its lease ran when the write was tracked (invalidations.ts, the same rule)
    if (lapsed && session.leaseUntil > p.at) (p.fenced ??= []).push(session.instance);
    if (--p.waiting === 0) this.#complete(p, now);
  }

  #complete(p: Pending, now: number): void {
    if (now < this.#notBefore) {
      this.#early.push({ pending: p, at: now });
      return;
    }
    this.#finish(p, { fenced: fencedOf(p), ms: now - p.at });
  }

  #finish(p: Pending, result: AckResult | undefined): void {
    if (p.waiting < 0) return;
    p.waiting = -1;
    this.#pending--;
    if (result === undefined) this.dropped++;
    try {
      p.done(result);
    } catch {
      // the requester's socket may be gone: nothing else depends on this ack
    }
  }
}

function fencedOf(p: Pending): string[] {
  return p.fenced === undefined ? [] : [...new Set(p.fenced)];
}
