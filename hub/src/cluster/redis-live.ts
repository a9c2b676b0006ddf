/**
 * The cluster-wide live feed through the cluster's Redis (redis-coordinator.ts): every hub's
 * events and periodic statuses over pub/sub, so that any hub's API and dashboard show the whole
 * cluster.
 *
 * Layout (prefix `hotkey:`):
 *   events   channel  `{ from, event }`: a hub's event, also appended to the history (redis-history.ts)
 *   status   channel  a hub's HubStatus; each hub keeps the latest of every other, at most
 *                     MAX_MEMBERS, dropped once older than `statusStaleMs`
 *
 * Informative only: with Redis down an event is dropped and counted (the history buffers it),
 * a status is not sent; a malformed message is counted and ignored.
 */
import type { HubEvent, HubStatus } from '../core/coordinator.ts';
import type { Logger } from '../core/logger.ts';
import { isReady, type Redis } from './redis-client.ts';
import { MAX_MEMBERS } from './redis-membership.ts';
import { parseHubEvent, type RedisHistory } from './redis-history.ts';

export interface RedisLiveOptions {
  client: Redis;
  prefix: string;
  selfId: string;
  history: RedisHistory;
  logger: Logger;
  /** ms after which another hub's last status is dropped @default 10000 */
  statusStaleMs?: number;
}

export class RedisLive {
  /** the channels this feed reads (the coordinator's subscriber subscribes to them) */
  readonly eventsChannel: string;
  readonly statusChannel: string;
  readonly #client: Redis;
  readonly #selfId: string;
  readonly #history: RedisHistory;
  readonly #logger: Logger;
  readonly #statusStaleMs: number;
  readonly #listeners: ((event: HubEvent) => void)[] = [];
  readonly #statuses = new Map<string, HubStatus>();
  /** live-feed messages not sent because Redis was down */
  droppedEvents = 0;
  /** malformed messages seen on the channels */
  badMessages = 0;

  constructor(opts: RedisLiveOptions) {
    this.#client = opts.client;
    this.#selfId = opts.selfId;
    this.#history = opts.history;
    this.#logger = opts.logger;
    this.#statusStaleMs = opts.statusStaleMs ?? 10_000;
    this.eventsChannel = `${opts.prefix}events`;
    this.statusChannel = `${opts.prefix}status`;
  }

  /**
   * This hub's event: to the history, to this hub's listeners, and to the other hubs. Its XADD and
   * PUBLISH leave in one pipeline: one socket write per event (a write's event is published on
   * every acked write), not one per command.
   */
  publishEvent(event: HubEvent): void {
    const pipe = isReady(this.#client) ? this.#client.pipeline() : undefined;
    this.#history.append(event, pipe);
    this.#emit(event);
    if (pipe === undefined) {
      this.droppedEvents++;
      return;
    }
    pipe.publish(this.eventsChannel, JSON.stringify({ from: this.#selfId, event }), (err) => {
      if (err) this.droppedEvents++;
    });
    // each command's own callback above hears its failure
    pipe.exec().catch(() => {});
  }

  onEvent(listener: (event: HubEvent) => void): void {
    this.#listeners.push(listener);
  }

  publishStatus(status: HubStatus): void {
    this.#statuses.set(this.#selfId, status);
    if (!isReady(this.#client)) return;
    this.#client.publish(this.statusChannel, JSON.stringify(status)).catch(() => {});
  }

  /**
   * The latest status of this hub and of each member in `live`, by hub id. Statuses of other
   * hubs are kept meanwhile, since a status may arrive before the membership change that
   * announces its hub.
   */
  statuses(live: ReadonlySet<string>): HubStatus[] {
    this.#prune();
    return [...this.#statuses.values()]
      .filter((s) => s.id === this.#selfId || live.has(s.id))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** A message on the events channel. */
  eventMessage(message: string): void {
    const parsed = parseJson(message) as { from?: unknown; event?: unknown } | undefined;
    const event = parseHubEvent(parsed?.event);
    if (!event) return void this.badMessages++;
    if (parsed?.from === this.#selfId) return;
    this.#history.remember(event);
    this.#emit(event);
  }

  /** A message on the status channel. */
  statusMessage(message: string): void {
    const status = parseJson(message) as HubStatus | undefined;
    if (
      typeof status !== 'object' ||
      status === null ||
      typeof status.id !== 'string' ||
      typeof status.updatedAt !== 'number'
    )
      return void this.badMessages++;
    if (status.id === this.#selfId) return;
    if (!this.#statuses.has(status.id) && this.#statuses.size >= MAX_MEMBERS) return;
    this.#statuses.set(status.id, status);
  }

  #emit(event: HubEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (err) {
        this.#logger.error({ evt: 'internal_error', what: 'event listener', err }, 'an event listener threw');
      }
    }
  }

  /** Statuses of hubs gone silent are dropped (the map is also capped at MAX_MEMBERS). */
  #prune(): void {
    const oldest = Date.now() - this.#statusStaleMs;
    for (const [id, status] of this.#statuses) {
      if (id !== this.#selfId && status.updatedAt < oldest) this.#statuses.delete(id);
    }
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
