/**
 * The transport of window handoff chunks (core/membership/handoff.ts) between hubs, through the cluster's
 * Redis: one list per recipient, so a chunk waits for a hub that is still starting.
 *
 * Layout (prefix `hotkey:`):
 *   handoff:<id>   list     chunks for hub <id>, oldest first; capped at `maxQueued` (the oldest
 *                           go) and expiring `ttlMs` after the last push, so chunks for a hub that
 *                           never reads them cost nothing for long
 *   handoff        channel  a recipient's id, published after each push: it reads its list now
 *
 * A send is one MULTI (RPUSH, LTRIM, PEXPIRE, PUBLISH). The recipient pops its list in batches
 * on every notice and every heartbeat (a notice lost while its subscriber reconnected costs one
 * beat). Redis down: the chunk is dropped and counted; the windows it carried are lost, as on a
 * crash. `flush` lets a leaving hub wait for its sends before it disconnects.
 */
import type { Logger } from '../core/logger.ts';
import { isReady, type Redis } from './redis-client.ts';

/** chunks popped per round trip */
const POP_BATCH = 64;

export interface RedisHandoffOptions {
  client: Redis;
  prefix: string;
  selfId: string;
  logger: Logger;
  /** chunks a recipient's list holds at most @default 1024 */
  maxQueued?: number;
  /** ms a list lives after its last push @default 10000 */
  ttlMs?: number;
}

export class RedisHandoff {
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #selfId: string;
  readonly #logger: Logger;
  readonly #maxQueued: number;
  readonly #ttlMs: number;
  readonly #listeners: ((bytes: Uint8Array) => void)[] = [];
  readonly #inflight = new Set<Promise<unknown>>();
  #draining = false;
  #again = false;
  /** chunks not delivered to Redis (down, or the write failed) */
  dropped = 0;

  constructor(opts: RedisHandoffOptions) {
    this.#client = opts.client;
    this.#prefix = opts.prefix;
    this.#selfId = opts.selfId;
    this.#logger = opts.logger;
    this.#maxQueued = opts.maxQueued ?? 1024;
    this.#ttlMs = opts.ttlMs ?? 10_000;
  }

  get channel(): string {
    return `${this.#prefix}handoff`;
  }

  onChunk(listener: (bytes: Uint8Array) => void): void {
    this.#listeners.push(listener);
  }

  send(to: string, bytes: Uint8Array): void {
    if (!isReady(this.#client)) {
      this.dropped++;
      return;
    }
    const list = this.#list(to);
    const done = this.#client
      .multi()
      .rpush(list, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
      .ltrim(list, -this.#maxQueued, -1)
      .pexpire(list, this.#ttlMs)
      .publish(this.channel, to)
      .exec()
      .then((replies) => {
        if (replies === null || replies.some(([err]) => err !== null)) throw new Error('MULTI failed');
      })
      .catch((err: unknown) => {
        this.dropped++;
        this.#logger.warn({ evt: 'handoff_send_failed', to, err }, 'could not hand windows over through Redis');
      });
    this.#inflight.add(done);
    void done.finally(() => this.#inflight.delete(done));
  }

  /** A notice on the channel: `id` has chunks waiting. */
  notified(id: string): void {
    if (id === this.#selfId) this.drain();
  }

  /** Pops and delivers this hub's waiting chunks (one drain at a time; a call meanwhile runs another after it). */
  drain(): void {
    if (this.#draining) {
      this.#again = true;
      return;
    }
    if (!isReady(this.#client)) return;
    this.#draining = true;
    void this.#pop()
      .catch(() => {})
      .finally(() => {
        this.#draining = false;
        if (this.#again) {
          this.#again = false;
          this.drain();
        }
      });
  }

  /** Waits (at most `timeoutMs`) for the sends under way. */
  async flush(timeoutMs: number): Promise<void> {
    if (this.#inflight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.#inflight]),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
  }

  async #pop(): Promise<void> {
    // bounded: a list holds maxQueued chunks at most, so this ends even if senders keep pushing
    for (let popped = 0; popped < this.#maxQueued; ) {
      const batch = await this.#client.lpopBuffer(this.#list(this.#selfId), POP_BATCH);
      if (batch === null || batch.length === 0) return;
      popped += batch.length;
      for (const bytes of batch) for (const listener of this.#listeners) listener(new Uint8Array(bytes));
      if (batch.length < POP_BATCH) return;
    }
  }

  #list(id: string): string {
    return `${this.#prefix}handoff:${id}`;
  }
}
