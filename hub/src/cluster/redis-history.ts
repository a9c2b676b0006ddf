/**
 * History of promotions, demotions and invalidations in a capped Redis stream (`hotkey:history`,
 * XADD MAXLEN ~), one JSON field `e` per entry.
 *
 * While Redis is down, events wait in a bounded buffer (the oldest are dropped and counted) and
 * are flushed in order when it returns. Queries while Redis is down answer from the recent events
 * this hub saw (its own and the cluster feed), the "last known state".
 *
 * Stream ids carry Redis' clock at insertion while `since` is about the event's own `at`, which is
 * earlier for buffered events; a query therefore starts a little before `since` and filters on
 * `at` exactly.
 */
import type { HubEvent } from '../core/coordinator.ts';
import { isReady, type Redis } from './redis-client.ts';
import type { Logger } from '../core/logger.ts';

const SCAN_BATCH = 1000;

/** a pipeline of the cluster's client */
export type Pipeline = ReturnType<Redis['pipeline']>;
/** how far before `since` a query starts reading stream ids (clock skew between hubs and Redis) */
const SKEW_MS = 5000;

export interface RedisHistoryOptions {
  client: Redis;
  prefix: string;
  /** approximate cap of the stream @default 10000 */
  maxLen?: number;
  /** events kept while Redis is down @default 1000 */
  maxBuffered?: number;
  /** recent events kept to answer queries while Redis is down @default 1000 */
  maxRecent?: number;
  logger: Logger;
}

const EVENT_TYPES = new Set(['promote', 'demote', 'invalidate']);

/** A HubEvent from untrusted JSON (another hub, or someone writing into Redis), or undefined. */
export function parseHubEvent(raw: unknown): HubEvent | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const e = raw as Record<string, unknown>;
  if (typeof e.type !== 'string' || !EVENT_TYPES.has(e.type)) return undefined;
  if (typeof e.app !== 'string' || typeof e.key !== 'string' || typeof e.hub !== 'string') return undefined;
  if (typeof e.qps !== 'number' || typeof e.at !== 'number' || !Number.isFinite(e.at)) return undefined;
  const event: HubEvent = {
    type: e.type as HubEvent['type'],
    app: e.app,
    key: e.key,
    qps: e.qps,
    at: e.at,
    hub: e.hub,
  };
  if (typeof e.latencyMs === 'number') event.latencyMs = e.latencyMs;
  if (typeof e.reason === 'string') event.reason = e.reason;
  if (typeof e.manual === 'boolean') event.manual = e.manual;
  if (typeof e.ackMs === 'number') event.ackMs = e.ackMs;
  if (Array.isArray(e.fenced)) event.fenced = e.fenced.filter((x): x is string => typeof x === 'string').slice(0, 64);
  if (typeof e.acked === 'boolean') event.acked = e.acked;
  return event;
}

export class RedisHistory {
  readonly #client: Redis;
  readonly #key: string;
  readonly #maxLen: number;
  readonly #maxBuffered: number;
  readonly #maxRecent: number;
  readonly #logger: Logger;
  #buffer: HubEvent[] = [];
  #recent: HubEvent[] = [];
  #flushing: Promise<void> | undefined;
  /** events lost because the buffer was full while Redis was down */
  dropped = 0;
  /** events whose XADD failed midway (maybe written, maybe not: not retried) */
  lost = 0;

  constructor(opts: RedisHistoryOptions) {
    this.#client = opts.client;
    this.#key = `${opts.prefix}history`;
    this.#maxLen = opts.maxLen ?? 10_000;
    this.#maxBuffered = opts.maxBuffered ?? 1000;
    this.#maxRecent = opts.maxRecent ?? 1000;
    this.#logger = opts.logger;
  }

  get buffered(): number {
    return this.#buffer.length;
  }

  /** Remembers an event seen on the live feed, for queries while Redis is down. */
  remember(event: HubEvent): void {
    this.#recent.push(event);
    if (this.#recent.length > this.#maxRecent * 2) this.#recent = this.#recent.slice(-this.#maxRecent);
  }

  /**
   * Appends this hub's event; never throws. Its XADD joins `pipe` (the caller runs it); without one
   * (Redis not ready), or behind events still buffered, the event is buffered.
   */
  append(event: HubEvent, pipe: Pipeline | undefined): void {
    this.remember(event);
    if (pipe === undefined || !isReady(this.#client) || this.#buffer.length > 0) return this.#enqueue(event);
    pipe.xadd(this.#key, 'MAXLEN', '~', this.#maxLen, '*', 'e', JSON.stringify(event), (err) => {
      if (!err) return;
      // Retry only what surely never reached Redis: a timed-out or cut-off XADD may have been
      // applied, and history must not show one promotion twice.
      if (neverSent(err)) this.#enqueue(event);
      else this.lost++;
    });
  }

  /** Writes buffered events in order (after Redis returns). */
  flush(): Promise<void> {
    this.#flushing ??= this.#flush().finally(() => (this.#flushing = undefined));
    return this.#flushing;
  }

  async #flush(): Promise<void> {
    while (this.#buffer.length > 0 && isReady(this.#client)) {
      const batch = this.#buffer.slice(0, 100);
      const pipe = this.#client.pipeline();
      for (const event of batch) pipe.xadd(this.#key, 'MAXLEN', '~', this.#maxLen, '*', 'e', JSON.stringify(event));
      const results = await pipe.exec();
      // Stop at the first failure: what follows stays buffered, in order, for the next flush.
      const written = results?.findIndex(([err]) => err !== null) ?? -1;
      const count = written === -1 ? batch.length : written;
      this.#buffer.splice(0, count);
      if (count < batch.length) return;
    }
  }

  #enqueue(event: HubEvent): void {
    this.#buffer.push(event);
    if (this.#buffer.length > this.#maxBuffered) {
      this.#buffer.shift();
      if (this.dropped++ === 0)
        this.#logger.warn(
          { evt: 'redis_history' },
          `history buffer full (${this.#maxBuffered} events) while Redis is down: dropping the oldest`,
        );
    }
  }

  /** Events of `app` (all when undefined) with `at >= since`, oldest first, at most `limit`. */
  async query(app: string | undefined, since: number, limit: number): Promise<HubEvent[]> {
    const max = Math.max(0, Math.min(Math.floor(limit), this.#maxLen));
    if (max === 0) return [];
    const keep = (e: HubEvent) => e.at >= since && (app === undefined || e.app === app);
    if (!isReady(this.#client)) return this.#fromRecent(keep, max);
    const found: HubEvent[] = [];
    let start = `${Math.max(0, Math.floor(since) - SKEW_MS)}`;
    // The stream is capped, so scanning it whole is bounded by maxLen (plus MAXLEN ~ slack).
    for (let scanned = 0; scanned <= this.#maxLen + SCAN_BATCH; scanned += SCAN_BATCH) {
      const entries = await this.#client.xrange(this.#key, start, '+', 'COUNT', SCAN_BATCH);
      for (const [, fields] of entries) {
        const event = decodeEntry(fields);
        if (event && keep(event)) found.push(event);
      }
      if (entries.length < SCAN_BATCH) break;
      start = `(${entries[entries.length - 1]![0]}`;
    }
    found.sort((a, b) => a.at - b.at);
    return found.slice(0, max);
  }

  #fromRecent(keep: (e: HubEvent) => boolean, max: number): HubEvent[] {
    return this.#recent
      .filter(keep)
      .sort((a, b) => a.at - b.at)
      .slice(0, max);
  }
}

/** ioredis refuses a command without sending it when the connection is not writable (no offline queue). */
function neverSent(err: Error): boolean {
  return /isn't writeable/.test(err.message);
}

function decodeEntry(fields: string[]): HubEvent | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] !== 'e') continue;
    try {
      return parseHubEvent(JSON.parse(fields[i + 1]!));
    } catch {
      return undefined;
    }
  }
  return undefined;
}
