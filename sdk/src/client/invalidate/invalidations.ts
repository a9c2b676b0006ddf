/**
 * Invalidations awaiting their hub's Ack. Each has an id (sent in InvalidateRequest, echoed in
 * Ack), the hub it went to, and a deadline. Bounded: past `maxPending` a new one is refused at
 * once rather than queued. When its hub is lost an invalidation moves to the key's new owner; with
 * no owner reachable it is *held* (no hub) and sent once one is (`sendHeld`), until its deadline.
 * It is never given up early: the lost hub may still be granting leases to instances that serve
 * the old value (a partition cuts only this instance off), so only an owner's Ack — whose fences
 * cover leases from a hub's previous life or a key's previous owner — proves the write visible.
 *
 * Deadlines share one timer: every invalidation waits the same `timeoutMs`, so the order they were
 * added in (the Map's) is the order they expire in, and the timer only ever needs the oldest's.
 * An ack arms and clears nothing (a write costs no timer of its own); the timer keeps the process
 * alive only while something is pending, as a timer per invalidation did.
 */
import { ErrorCode, HotKeyError } from '../../errors.ts';

/** What an acknowledged invalidation resolves to (the client's InvalidateResult). */
export interface AckInfo {
  hub: string;
  fenced: string[];
  ms: number;
}

interface PendingInvalidation {
  key: string;
  /** where its request went; undefined: held, no owner hub reachable */
  hub: string | undefined;
  resolve: (info: AckInfo) => void;
  reject: (err: HotKeyError) => void;
  /** performance.now() past which it rejects with HK_ERR_TIMEOUT */
  deadline: number;
}

export interface PendingInvalidationsOptions {
  /** an invalidation not acked within this rejects with HK_ERR_TIMEOUT */
  timeoutMs: number;
  /** invalidations awaiting their ack at most; more reject with HK_ERR_UNAVAILABLE */
  maxPending: number;
}

export class PendingInvalidations {
  readonly #pending = new Map<number, PendingInvalidation>();
  readonly #timeoutMs: number;
  readonly #maxPending: number;
  #nextId = 0;
  /** invalidations that timed out */
  timeouts = 0;
  /** pending ones held for want of a reachable owner hub */
  #held = 0;
  /** set for the oldest pending one's deadline (or an earlier one's, since acked) */
  #timer: NodeJS.Timeout | undefined;

  constructor(options: PendingInvalidationsOptions) {
    this.#timeoutMs = options.timeoutMs;
    this.#maxPending = options.maxPending;
  }

  get size(): number {
    return this.#pending.size;
  }

  /** invalidations held now: no owner hub reachable to send them to */
  get held(): number {
    return this.#held;
  }

  /**
   * Registers an invalidation of `key` sent to `hub` (undefined: held until `sendHeld`); `send(id)`
   * sends the request; `registered(id)` hears its id, sent or held. Resolves on `ack(id)`; rejects
   * on timeout, when the queue is full, or on `closeAll`.
   */
  add(
    key: string,
    hub: string | undefined,
    send: (id: number, hub: string) => void,
    registered?: (id: number) => void,
  ): Promise<AckInfo> {
    if (this.#pending.size >= this.#maxPending) {
      const held = this.#held > 0 ? ` (${this.#held} held: no owner hub reachable)` : '';
      return Promise.reject(
        new HotKeyError(ErrorCode.Unavailable, `${this.#pending.size} invalidations already await their ack${held}`),
      );
    }
    return new Promise<AckInfo>((resolve, reject) => {
      const id = ++this.#nextId;
      const deadline = performance.now() + this.#timeoutMs;
      this.#pending.set(id, { key, hub, resolve, reject, deadline });
      if (this.#timer === undefined) this.#arm(deadline);
      else if (this.#pending.size === 1) this.#timer.ref();
      registered?.(id);
      if (hub === undefined) this.#held++;
      else send(id, hub);
    });
  }

  ack(id: number, info: AckInfo): void {
    const p = this.#pending.get(id);
    if (p === undefined) return;
    this.#forget(id);
    p.resolve(info);
  }

  #forget(id: number): void {
    const p = this.#pending.get(id);
    if (p !== undefined && p.hub === undefined) this.#held--;
    this.#pending.delete(id);
    // left set: the next invalidation most likely comes before it fires; it holds nothing alive
    if (this.#pending.size === 0) this.#timer?.unref();
  }

  #arm(deadline: number): void {
    // a timer can fire a little before performance.now() reaches the deadline: at least 1 ms on
    this.#timer = setTimeout(() => this.#expire(), Math.max(1, Math.ceil(deadline - performance.now())));
  }

  /** The timer fired: every invalidation past its deadline rejects; it is set again for the next one. */
  #expire(): void {
    this.#timer = undefined;
    const now = performance.now();
    for (const [id, p] of this.#pending) {
      if (p.deadline > now) {
        this.#arm(p.deadline);
        return;
      }
      this.#forget(id);
      this.timeouts++;
      const why = p.hub === undefined ? ' (no hub owning it was reachable)' : '';
      p.reject(
        new HotKeyError(
          ErrorCode.Timeout,
          `invalidation of "${p.key}" not acknowledged within ${this.#timeoutMs} ms${why}`,
        ),
      );
    }
  }

  /** A hub is reachable again: each held invalidation goes to `send(id, key)`, which returns the hub it went to, or undefined (still held). */
  sendHeld(send: (id: number, key: string) => string | undefined): void {
    if (this.#held === 0) return;
    for (const [id, p] of this.#pending) {
      if (p.hub !== undefined) continue;
      const hub = send(id, p.key);
      if (hub === undefined) continue;
      p.hub = hub;
      this.#held--;
    }
  }

  /**
   * `hub` was lost before it acked: each of its invalidations goes to `resend(id, key)`, which
   * returns the hub it was sent to (the key's new owner), or undefined: then it is held.
   */
  hubLost(hub: string, resend: (id: number, key: string) => string | undefined): void {
    for (const [id, p] of this.#pending) {
      if (p.hub !== hub) continue;
      p.hub = resend(id, p.key);
      if (p.hub === undefined) this.#held++;
    }
  }

  /** Rejects every pending invalidation with HK_ERR_CLOSED. */
  closeAll(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const p of this.#pending.values()) {
      p.reject(new HotKeyError(ErrorCode.Closed, `client closed before "${p.key}" was acknowledged`));
    }
    this.#pending.clear();
    this.#held = 0;
  }
}
