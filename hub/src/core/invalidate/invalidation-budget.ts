/**
 * The intake side of invalidations: how many InvalidateRequests one connection may put through
 * the hub, and in what order when several connections want more than that.
 *
 * Each connection has a token bucket (`invalidateRate` per second, `invalidateBurst`). A request
 * with a token goes to the router at once; one without waits in the connection's own FIFO, so a
 * bulk write job is slowed to its rate and still completes. The FIFO holds at most
 * `maxQueuedInvalidations` (the SDK's default `maxPendingInvalidations`: an SDK with default
 * options can never overflow it, since it never has more requests unanswered); a request past it
 * closes the connection with HK_ERR_RATE_LIMITED / 4012. Queued requests are released by a timer
 * at the next token, round robin over the waiting connections, at most `maxPerTurn` per event
 * loop turn (then setImmediate), so releasing a backlog never stalls the hub.
 */
import { ErrorCode, ProtocolError } from '@hotkey/sdk';
import { CloseCode, type InvalidateRequest } from '@hotkey/sdk/protocol';
import { TokenBucket } from '../token-bucket.ts';

export interface InvalidationBudgetOptions {
  /** requests per second per connection */
  rate: number;
  /** requests a connection may send at once before its rate applies */
  burst: number;
  /** requests waiting for a token per connection at most; one more closes it with 4012 */
  maxQueued: number;
  /** wall clock in ms, for the token refill */
  wallNow: () => number;
  /** hands a request to the router */
  route: (requester: Requester, request: InvalidateRequest) => void;
  /** requests released from queues per event loop turn @default 256 */
  maxPerTurn?: number;
}

/** The connection as this module sees it. */
export interface Requester {
  readonly closed: boolean;
  fail(err: unknown): void;
}

interface Waiting {
  bucket: TokenBucket;
  queue: InvalidateRequest[];
  head: number;
}

export interface InvalidationBudgetStats {
  /** requests that had to wait for a token */
  delayed: number;
  /** connections closed with 4012 for overflowing their queue */
  refused: number;
  /** requests waiting now, all connections */
  queued: number;
}

export class InvalidationBudget {
  readonly #opts: InvalidationBudgetOptions;
  readonly #maxPerTurn: number;
  readonly #state = new WeakMap<Requester, Waiting>();
  /** connections with queued requests, in round-robin order */
  readonly #waiting = new Set<Requester>();
  #timer: NodeJS.Timeout | undefined;
  #immediate = false;
  #delayed = 0;
  #refused = 0;
  #queued = 0;

  constructor(options: InvalidationBudgetOptions) {
    this.#opts = options;
    this.#maxPerTurn = options.maxPerTurn ?? 256;
  }

  get stats(): InvalidationBudgetStats {
    return { delayed: this.#delayed, refused: this.#refused, queued: this.#queued };
  }

  /** A request from `from`: routed now, queued behind its earlier ones, or refused (throws, 4012). */
  request(from: Requester, request: InvalidateRequest): void {
    const now = this.#opts.wallNow();
    let state = this.#state.get(from);
    if (state === undefined) {
      state = { bucket: new TokenBucket(this.#opts.rate, this.#opts.burst, now), queue: [], head: 0 };
      this.#state.set(from, state);
    }
    if (state.queue.length === state.head && state.bucket.take(now)) {
      this.#opts.route(from, request);
      return;
    }
    if (state.queue.length - state.head >= this.#opts.maxQueued) {
      this.#refused++;
      throw new ProtocolError(
        ErrorCode.RateLimited,
        `more than ${this.#opts.maxQueued} invalidations wait for this connection's budget (${this.#opts.rate}/s): send fewer at once`,
        CloseCode.RateLimited,
      );
    }
    state.queue.push(request);
    this.#queued++;
    this.#delayed++;
    this.#waiting.add(from);
    this.#schedule(state.bucket.waitMs(now));
  }

  /** The connection is gone: its waiting requests are dropped (its SDK re-sends them elsewhere). */
  closed(from: Requester): void {
    const state = this.#state.get(from);
    if (state === undefined) return;
    this.#queued -= state.queue.length - state.head;
    this.#state.delete(from);
    this.#waiting.delete(from);
  }

  /** Stops the release timer (hub shutdown). */
  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(waitMs: number): void {
    if (this.#immediate || this.#timer !== undefined) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#release();
      },
      Math.max(1, waitMs),
    );
    this.#timer.unref();
  }

  #release(): void {
    this.#immediate = false;
    const now = this.#opts.wallNow();
    let released = 0;
    let soonest = Infinity;
    // round robin: one request per waiting connection per pass, so a deep queue cannot starve a short one
    while (released < this.#maxPerTurn && this.#waiting.size > 0) {
      let progressed = false;
      for (const from of this.#waiting) {
        const state = this.#state.get(from);
        if (state === undefined || from.closed) {
          this.closed(from);
          continue;
        }
        if (!state.bucket.take(now)) continue;
        const request = state.queue[state.head]!;
        state.queue[state.head] = undefined as never;
        state.head++;
        this.#queued--;
        if (state.head === state.queue.length) {
          state.queue = [];
          state.head = 0;
          this.#waiting.delete(from);
        } else if (state.head > 1024 && state.head * 2 > state.queue.length) {
          state.queue = state.queue.slice(state.head);
          state.head = 0;
        }
        try {
          this.#opts.route(from, request);
        } catch (err) {
          from.fail(err);
        }
        progressed = true;
        if (++released >= this.#maxPerTurn) break;
      }
      if (!progressed) break;
    }
    for (const from of this.#waiting) {
      const state = this.#state.get(from);
      if (state !== undefined) soonest = Math.min(soonest, state.bucket.waitMs(now));
    }
    if (this.#waiting.size === 0) return;
    if (soonest === 0) {
      // more to release now: after pending I/O
      this.#immediate = true;
      setImmediate(() => this.#release());
    } else this.#schedule(soonest);
  }
}
