/**
 * `Coordinator` for a cluster of hubs sharing one Redis: membership (redis-membership.ts), rules
 * and tokens (redis-rules.ts), history (redis-history.ts), the cluster-wide live feed of events
 * and hub statuses (redis-live.ts), window handoffs (redis-handoff.ts).
 *
 * Two connections: commands, and a subscriber (a subscribed connection can run nothing else).
 * Redis may be down at start or at any time: every read answers from the last known state, every
 * informative write is dropped or buffered (bounded), `health()` says degraded, and when Redis
 * comes back the hub re-registers, seeds and re-reads rules and flushes its buffered history.
 */
import type { Member } from '@hotkey/sdk/protocol';
import type { Rule } from '@hotkey/sdk/rules';
import type { AppAuth, Coordinator, CoordinatorCounters, Health, HubEvent, HubStatus } from '../core/coordinator.ts';
import type { ConnectionOptions } from 'node:tls';
import { consoleWarnings, type Logger } from '../core/logger.ts';
import { connectInBackground, createRedisClient, isReady, redactUrl, type Redis } from './redis-client.ts';
import { RedisMembership } from './redis-membership.ts';
import { RedisRules, type AppSeed } from './redis-rules.ts';
import { RedisHistory } from './redis-history.ts';
import { RedisHandoff } from './redis-handoff.ts';
import { RedisLive } from './redis-live.ts';

export type { AppSeed };

export interface RedisCoordinatorOptions {
  /** `redis://host:port[/db]` */
  url: string;
  /** this hub's id, unique in the cluster @default `hub-<random>` */
  nodeId?: string;
  /** apps of the config file: tokens, and rules that seed Redis when it has none @default {} */
  apps?: Readonly<Record<string, AppSeed>>;
  /** every app exists, even one neither config nor Redis knows (embedded defaults) @default false */
  open?: boolean;
  /** prefix of every Redis key and channel, so that clusters (or tests) can share one Redis @default 'hotkey:' */
  prefix?: string;
  /** how often this hub refreshes its membership @default 500 */
  heartbeatMs?: number;
  /** a hub not heard of for this long leaves the member list @default 2000 */
  memberTtlMs?: number;
  /** how often rules and tokens are re-read, to catch edits made straight in Redis @default 500 */
  rulesPollMs?: number;
  /** how long start() waits for Redis before going on alone (it keeps retrying) @default 2000 */
  startTimeoutMs?: number;
  /** approximate cap of the history stream @default 10000 */
  historyMaxLen?: number;
  /** history events kept while Redis is down @default 1000 */
  historyBuffer?: number;
  /** statuses older than this are not listed @default 10000 */
  statusStaleMs?: number;
  /** upper bound of the reconnect backoff @default 1000 */
  maxBackoffMs?: number;
  /** TLS options for a `rediss://` URL, e.g. `{ ca }` @default {} (the system CAs) */
  tls?: ConnectionOptions;
  /** where Redis state changes and warnings go, as `{ evt: 'redis_down' | 'redis_up' | … }` events @default consoleWarnings */
  logger?: Logger;
}

export class RedisCoordinator implements Coordinator {
  readonly selfId: string;
  readonly #url: string;
  readonly #prefix: string;
  readonly #open: boolean;
  readonly #heartbeatMs: number;
  readonly #ttlMs: number;
  readonly #rulesPollMs: number;
  readonly #startTimeoutMs: number;
  readonly #logger: Logger;
  /** the URL without its password, for logs */
  readonly #safeUrl: string;
  readonly #client: Redis;
  readonly #subscriber: Redis;
  readonly #rules: RedisRules;
  readonly #history: RedisHistory;
  readonly #handoff: RedisHandoff;
  readonly #live: RedisLive;
  #membership: RedisMembership | undefined;
  readonly #memberListeners: ((epoch: number, members: Member[]) => void)[] = [];
  readonly #timers: NodeJS.Timeout[] = [];
  #synced = false;
  #syncedWaiters: (() => void)[] = [];
  #resyncing: Promise<void> | undefined;
  #beating = false;
  /** a member change was announced while a beat was in flight: another one follows it */
  #beatAgain = false;
  #polling = false;
  #downSince: number | undefined;
  #closed = false;

  constructor(opts: RedisCoordinatorOptions) {
    if (typeof opts.url !== 'string' || !/^rediss?:\/\//.test(opts.url))
      throw new TypeError(`redis url must start with redis:// or rediss://, got ${String(opts.url)}`);
    this.selfId = opts.nodeId ?? `hub-${Math.random().toString(36).slice(2, 10)}`;
    this.#url = opts.url;
    this.#prefix = opts.prefix ?? 'hotkey:';
    this.#open = opts.open ?? false;
    this.#heartbeatMs = opts.heartbeatMs ?? 500;
    this.#ttlMs = opts.memberTtlMs ?? 2000;
    if (this.#ttlMs <= this.#heartbeatMs)
      throw new TypeError(`memberTtlMs (${this.#ttlMs}) must exceed heartbeatMs (${this.#heartbeatMs})`);
    this.#rulesPollMs = opts.rulesPollMs ?? 500;
    this.#startTimeoutMs = opts.startTimeoutMs ?? 2000;
    this.#logger = opts.logger ?? consoleWarnings;
    this.#safeUrl = redactUrl(opts.url);
    // A reply slower than the member TTL is useless anyway: by then the others dropped this hub.
    const clientOpts = {
      url: opts.url,
      tls: opts.tls,
      maxBackoffMs: opts.maxBackoffMs,
      commandTimeoutMs: Math.min(1000, this.#ttlMs),
    };
    this.#client = createRedisClient({ ...clientOpts, name: `hotkey-hub:${this.selfId}` });
    this.#subscriber = createRedisClient({ ...clientOpts, name: `hotkey-hub:${this.selfId}:sub`, subscriber: true });
    this.#rules = new RedisRules({
      client: this.#client,
      prefix: this.#prefix,
      apps: opts.apps ?? {},
      logger: this.#logger,
    });
    this.#history = new RedisHistory({
      client: this.#client,
      prefix: this.#prefix,
      maxLen: opts.historyMaxLen,
      maxBuffered: opts.historyBuffer,
      logger: this.#logger,
    });
    this.#handoff = new RedisHandoff({
      client: this.#client,
      prefix: this.#prefix,
      selfId: this.selfId,
      logger: this.#logger,
    });
    this.#live = new RedisLive({
      client: this.#client,
      prefix: this.#prefix,
      selfId: this.selfId,
      history: this.#history,
      logger: this.#logger,
      statusStaleMs: opts.statusStaleMs,
    });
  }

  /** live-feed messages not sent because Redis was down */
  get droppedEvents(): number {
    return this.#live.droppedEvents;
  }

  /** malformed messages seen on the live feed's channels */
  get badMessages(): number {
    return this.#live.badMessages;
  }

  async start(self: Member): Promise<void> {
    if (this.#membership) throw new TypeError('start() was already called');
    if (self.id !== this.selfId)
      throw new TypeError(`start(self): self.id "${self.id}" differs from selfId "${this.selfId}"`);
    const membership = new RedisMembership({ client: this.#client, prefix: this.#prefix, self, ttlMs: this.#ttlMs });
    this.#membership = membership;
    membership.onChange((epoch, members) => {
      for (const listener of this.#memberListeners) listener(epoch, members);
    });

    this.#client.on('ready', () => void this.#resync());
    this.#client.on('close', () => this.#markDown());
    this.#subscriber.on('ready', () => this.#maybeRecovered());
    this.#subscriber.on('close', () => this.#markDown());
    this.#subscriber.on('message', (channel: string, message: string) => this.#onMessage(channel, message));
    this.#subscriber
      .subscribe(
        membership.channel,
        membership.aliveChannel,
        this.#rules.channel,
        this.#live.eventsChannel,
        this.#live.statusChannel,
        this.#handoff.channel,
      )
      .catch(() => {});
    connectInBackground(this.#client);
    connectInBackground(this.#subscriber);

    this.#every(this.#heartbeatMs, () => this.#beat());
    this.#every(this.#rulesPollMs, () => this.#poll());

    const synced = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), this.#startTimeoutMs);
      this.#syncedWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (!(await synced) && !this.#closed) {
      this.#logger.warn(
        { evt: 'redis_unreachable', url: this.#safeUrl },
        `cannot reach Redis at ${this.#safeUrl}: serving alone with the configured rules and retrying in the background`,
      );
    }
  }

  async leave(): Promise<void> {
    const membership = this.#membership;
    if (!membership || membership.left) return;
    try {
      await membership.leave();
    } catch (err) {
      this.#logger.warn(
        { evt: 'redis_leave_failed', err, expiresInMs: this.#ttlMs },
        'could not remove this hub from the member list in Redis; it expires by itself',
      );
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#timers) clearInterval(timer);
    for (const waiter of this.#syncedWaiters) waiter();
    this.#syncedWaiters = [];
    await this.#handoff.flush(Math.min(1000, this.#ttlMs));
    if (isReady(this.#client) && this.#history.buffered > 0) await this.#history.flush().catch(() => {});
    this.#client.disconnect();
    this.#subscriber.disconnect();
  }

  members(): { epoch: number; members: Member[] } {
    return this.#membership?.snapshot() ?? { epoch: 0, members: [{ id: this.selfId, url: '' }] };
  }

  onMembers(listener: (epoch: number, members: Member[]) => void): void {
    this.#memberListeners.push(listener);
  }

  app(app: string): AppAuth | undefined {
    if (!this.#rules.has(app) && !this.#open) return undefined;
    const token = this.#rules.token(app);
    return token === undefined ? {} : { token };
  }

  apps(): string[] {
    return this.#rules.apps();
  }

  rules(app: string): Rule[] {
    return this.#rules.rules(app);
  }

  setRules(app: string, rules: unknown): Promise<Rule[]> {
    return this.#rules.set(app, rules);
  }

  reconfigure(apps: Readonly<Record<string, AppSeed>>): void {
    this.#rules.reconfigure(apps);
  }

  onRules(listener: (app: string, rules: Rule[]) => void): void {
    this.#rules.onChange(listener);
  }

  sendHandoff(to: string, bytes: Uint8Array): void {
    this.#handoff.send(to, bytes);
  }

  onHandoff(listener: (bytes: Uint8Array) => void): void {
    this.#handoff.onChunk(listener);
  }

  publishEvent(event: HubEvent): void {
    this.#live.publishEvent(event);
  }

  onEvent(listener: (event: HubEvent) => void): void {
    this.#live.onEvent(listener);
  }

  history(app: string | undefined, since: number, limit: number): Promise<HubEvent[]> {
    return this.#history.query(app, since, limit);
  }

  publishStatus(status: HubStatus): void {
    this.#live.publishStatus(status);
  }

  statuses(): HubStatus[] {
    return this.#live.statuses(new Set(this.members().members.map((m) => m.id)));
  }

  health(): Health {
    if (!this.#membership) return { state: 'degraded', detail: 'not started' };
    if (this.#closed) return { state: 'degraded', detail: 'closed' };
    const beatAge = Date.now() - this.#membership.lastBeatAt;
    if (
      isReady(this.#client) &&
      isReady(this.#subscriber) &&
      this.#synced &&
      (this.#membership.left || beatAge < this.#ttlMs)
    ) {
      return { state: 'ok', detail: `redis ${this.#url}` };
    }
    const since = this.#downSince === undefined ? '' : ` since ${new Date(this.#downSince).toISOString()}`;
    return {
      state: 'degraded',
      detail: `redis ${this.#url} unreachable${since}: serving the last known members and rules, reconnecting`,
    };
  }

  /** counters exported at /metrics as `hotkey_cluster_*` */
  stats(): CoordinatorCounters {
    return {
      droppedEvents: this.#live.droppedEvents,
      droppedHistory: this.#history.dropped + this.#history.lost,
      bufferedHistory: this.#history.buffered,
      rejectedRules: this.#rules.rejected,
      badMessages: this.#live.badMessages,
      droppedHandoffs: this.#handoff.dropped,
    };
  }

  // ---- internals ----

  #every(ms: number, fn: () => void): void {
    const timer = setInterval(fn, ms);
    timer.unref();
    this.#timers.push(timer);
  }

  /** After every (re)connect: register, seed and read rules, flush history. */
  #resync(): Promise<void> {
    this.#resyncing ??= (async () => {
      try {
        await this.#membership!.beat(true);
        await this.#rules.seed();
        await this.#rules.sync();
        await this.#history.flush();
        this.#synced = true;
        this.#maybeRecovered();
        this.#handoff.drain();
      } catch (err) {
        if (!this.#closed)
          this.#logger.warn({ evt: 'redis_resync_failed', err }, 'resynchronising with Redis failed; retrying');
        this.#synced = false;
      } finally {
        this.#resyncing = undefined;
      }
    })();
    return this.#resyncing;
  }

  #markDown(): void {
    if (this.#closed) return;
    this.#synced = false;
    if (this.#downSince !== undefined) return;
    this.#downSince = Date.now();
    this.#logger.warn(
      { evt: 'redis_down', url: this.#safeUrl },
      `lost Redis at ${this.#safeUrl}: serving the last known members and rules, reconnecting`,
    );
  }

  #maybeRecovered(): void {
    if (!this.#synced || !isReady(this.#subscriber)) return;
    const waiters = this.#syncedWaiters;
    this.#syncedWaiters = [];
    for (const waiter of waiters) waiter();
    if (this.#downSince !== undefined) {
      this.#logger.info(
        { evt: 'redis_up', url: this.#safeUrl, downMs: Date.now() - this.#downSince },
        'Redis is back: resynchronised',
      );
      this.#downSince = undefined;
    }
  }

  #beat(): void {
    if (this.#beating || this.#closed || !isReady(this.#client)) return;
    if (!this.#synced) {
      void this.#resync();
      return;
    }
    this.#beating = true;
    this.#handoff.drain();
    this.#membership!.beat()
      .then(() => (this.#history.buffered > 0 ? this.#history.flush() : undefined))
      .catch(() => {})
      .finally(() => {
        this.#beating = false;
        if (this.#beatAgain) {
          this.#beatAgain = false;
          this.#beat();
        }
      });
  }

  /**
   * The member list changed: fetch it now. A beat in flight may have read the list before the
   * change, so one more follows it; otherwise the change would wait for the next heartbeat, and
   * meanwhile this hub refuses reports of the keys it just took over (the SDKs route to it as soon
   * as a leaving hub tells them).
   */
  #membersChanged(): void {
    if (this.#beating) this.#beatAgain = true;
    else this.#beat();
  }

  #poll(): void {
    if (this.#polling || this.#closed || !this.#synced || !isReady(this.#client)) return;
    this.#polling = true;
    this.#rules
      .sync()
      .catch(() => {})
      .finally(() => (this.#polling = false));
  }

  #onMessage(channel: string, message: string): void {
    if (this.#closed) return;
    if (channel === this.#membership?.channel) {
      // Someone joined, left or was swept: fetch the new list now rather than at the next beat.
      this.#membersChanged();
    } else if (channel === this.#handoff.channel) {
      this.#handoff.notified(message);
    } else if (channel === this.#rules.channel) {
      this.#rules.syncApp(message).catch(() => {});
    } else if (channel === this.#live.eventsChannel) {
      this.#live.eventMessage(message);
    } else if (channel === this.#live.statusChannel) {
      this.#live.statusMessage(message);
    }
  }
}
