/**
 * Write coalescing: a hot counter's INCRs are merged locally for a short window (100 ms by
 * default) and sent as one INCRBY, so Redis sees one write per window instead of one per caller.
 *
 * Per key, increments arriving within `windowMs` of the first one form a batch; the batch goes to
 * Redis as one INCRBY of their sum. When it lands with result R, the i-th caller of the batch gets
 * R minus the increments that came after it in the batch: the value the key had right after its
 * own increment in the serial order "everything before this INCRBY, then the batch in arrival
 * order". So every caller's reply is consistent with one serial history, as it would be if each
 * had sent its own INCRBY back to back. A caller hears back only after the merged write landed
 * (and, via `onLanded`, after its invalidation: the wrapper waits for the hub's ack as for any write).
 *
 * Errors: when the INCRBY fails every caller of the batch is rejected with that error. It is not
 * retried: a write that timed out may have been applied, and a retry could apply it twice.
 * `flush()` sends every open batch now (the wrapper calls it before QUIT and on `hk.close()`, so neither drops
 * increments). A batch is also sent early once it holds `maxBatch` callers (bounded memory).
 */

export interface CoalescerOptions {
  /** sends one merged increment; resolves the key's new value */
  send: (key: string, sum: number) => Promise<number>;
  /** runs after a batch landed, before its callers hear back (invalidation) @default none */
  onLanded?: (key: string) => Promise<unknown>;
  /** callers per batch before it is sent early @default 10000 */
  maxBatch?: number;
}

interface Waiter {
  delta: number;
  resolve: (value: number) => void;
  reject: (error: unknown) => void;
}

interface Batch {
  sum: number;
  waiters: Waiter[];
  timer: ReturnType<typeof setTimeout>;
}

export interface CoalescerStats {
  /** increments merged (each caller counts once) */
  increments: number;
  /** INCRBY commands sent for them */
  flushes: number;
  /** batches whose INCRBY failed (every caller rejected) */
  failures: number;
}

export class Coalescer {
  readonly stats: CoalescerStats = { increments: 0, flushes: 0, failures: 0 };
  readonly #open = new Map<string, Batch>();
  readonly #send: CoalescerOptions['send'];
  readonly #onLanded: CoalescerOptions['onLanded'];
  readonly #maxBatch: number;

  constructor(options: CoalescerOptions) {
    this.#send = options.send;
    this.#onLanded = options.onLanded;
    this.#maxBatch = options.maxBatch ?? 10_000;
  }

  /** keys with a batch waiting */
  get pending(): number {
    return this.#open.size;
  }

  /** Adds `delta` to `key`'s batch (opening one that closes in `windowMs`); resolves as the module comment says. */
  add(key: string, delta: number, windowMs: number): Promise<number> {
    this.stats.increments++;
    let batch = this.#open.get(key);
    if (batch === undefined) {
      batch = { sum: 0, waiters: [], timer: setTimeout(() => this.#flush(key), windowMs) };
      batch.timer.unref?.();
      this.#open.set(key, batch);
    }
    const open = batch;
    const result = new Promise<number>((resolve, reject) => open.waiters.push({ delta, resolve, reject }));
    open.sum += delta;
    if (open.waiters.length >= this.#maxBatch) this.#flush(key);
    return result;
  }

  /** Sends every open batch now; resolves when all have landed (failures reach their callers, not here). */
  flush(): Promise<void> {
    return Promise.all([...this.#open.keys()].map((key) => this.#flush(key))).then(() => undefined);
  }

  #flush(key: string): Promise<void> {
    const batch = this.#open.get(key);
    if (batch === undefined) return Promise.resolve();
    this.#open.delete(key);
    clearTimeout(batch.timer);
    this.stats.flushes++;
    let sent: Promise<number>;
    try {
      sent = this.#send(key, batch.sum);
    } catch (err) {
      sent = Promise.reject(err);
    }
    return sent
      .then(async (result) => {
        if (this.#onLanded !== undefined) await this.#onLanded(key).catch(() => {});
        // the serial order: earlier callers first; each sees the value right after its increment
        let after = result;
        for (let i = batch.waiters.length - 1; i >= 0; i--) {
          const w = batch.waiters[i]!;
          w.resolve(after);
          after -= w.delta;
        }
      })
      .catch((err: unknown) => {
        this.stats.failures++;
        for (const w of batch.waiters) w.reject(err);
      });
  }
}
