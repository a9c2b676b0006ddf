/**
 * Invalidations awaiting their hub's Ack. Each has an id (sent in InvalidateRequest, echoed in
 * Ack), the hub it went to, and a deadline. Bounded: past `maxPending` a new one is refused at
 * once rather than queued. When its hub is lost an invalidation moves to the key's new owner, or
 * fails now: an ack that can never come is never waited for.
 */
import { ErrorCode, HotKeyError } from '../errors.ts';

interface PendingInvalidation {
  key: string;
  hub: string;
  resolve: () => void;
  reject: (err: HotKeyError) => void;
  timer: NodeJS.Timeout;
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

  constructor(options: PendingInvalidationsOptions) {
    this.#timeoutMs = options.timeoutMs;
    this.#maxPending = options.maxPending;
  }

  get size(): number {
    return this.#pending.size;
  }

  /**
   * Registers an invalidation of `key` sent to `hub`; `send(id)` sends the request. Resolves on
   * `ack(id)`; rejects on timeout, when the queue is full, or when `failAll`/`hubLost` says so.
   */
  add(key: string, hub: string, send: (id: number) => void): Promise<void> {
    if (this.#pending.size >= this.#maxPending) {
      return Promise.reject(
        new HotKeyError(ErrorCode.Unavailable, `${this.#pending.size} invalidations already await their ack`),
      );
    }
    return new Promise<void>((resolve, reject) => {
      const id = ++this.#nextId;
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        this.timeouts++;
        reject(
          new HotKeyError(ErrorCode.Timeout, `invalidation of "${key}" not acknowledged within ${this.#timeoutMs} ms`),
        );
      }, this.#timeoutMs);
      this.#pending.set(id, { key, hub, resolve, reject, timer });
      send(id);
    });
  }

  ack(id: number): void {
    const p = this.#pending.get(id);
    if (p === undefined) return;
    clearTimeout(p.timer);
    this.#pending.delete(id);
    p.resolve();
  }

  /**
   * `hub` was lost before it acked: each of its invalidations goes to `resend(id, key)`, which
   * returns the hub it was sent to (the key's new owner), or undefined: then it fails now.
   */
  hubLost(hub: string, resend: (id: number, key: string) => string | undefined): void {
    for (const [id, p] of this.#pending) {
      if (p.hub !== hub) continue;
      const owner = resend(id, p.key);
      if (owner !== undefined) {
        p.hub = owner;
      } else {
        clearTimeout(p.timer);
        this.#pending.delete(id);
        p.reject(new HotKeyError(ErrorCode.Unavailable, `hub ${hub} was lost before it acknowledged "${p.key}"`));
      }
    }
  }

  /** Rejects every pending invalidation with HK_ERR_CLOSED. */
  closeAll(): void {
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(new HotKeyError(ErrorCode.Closed, `client closed before "${p.key}" was acknowledged`));
    }
    this.#pending.clear();
  }
}
