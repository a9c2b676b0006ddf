/**
 * Per-app rules and tokens shared through Redis.
 *
 * Layout (prefix `hotkey:`):
 *   rules          hash     app -> JSON rule list (validated by parseRules before use)
 *   tokens         hash     app -> token SDKs of the app must present
 *   rules-changed  channel  app name, published by setRules
 *
 * A change made through a hub is published and applied by every hub at once; a change made
 * straight in Redis (redis-cli HSET) is caught by polling, which is why both exist. What Redis
 * holds wins over the config file once read; the config only seeds Redis (HSETNX) for apps Redis
 * does not know. Garbage in Redis is logged once per distinct value and the previous rules stay.
 * Apps that vanish from Redis (it restarted empty) keep their last known rules, and the next
 * connect seeds Redis back from them, so live edits survive a Redis restart.
 *
 * Reads overlap (a poll, a change notice, this hub's own write) and their replies may be handled
 * out of the order Redis answered them in (a poll's two HGETALLs settle after a later HGET's
 * reply). All go over one connection, which Redis answers in the order they were sent, so each
 * carries its send number and a value older than the one applied is dropped: a poll answered
 * before a change never puts the old rules back.
 */
import { parseRules, rulesForPeers, type Rule } from '@hotkey/sdk/rules';
import { ErrorCode, HotKeyError } from '@hotkey/sdk';
import type { AppSeed } from '../core/coordinator.ts';
import { MAX_NAME_LENGTH } from '@hotkey/sdk/protocol';
import { isReady, type Redis } from './redis-client.ts';
import type { Logger } from '../core/logger.ts';

/** apps read from Redis beyond this are ignored (with a warning): memory stays bounded */
export const MAX_APPS = 10_000;
/** a stored rule list or token longer than this is refused */
const MAX_VALUE_LENGTH = 1 << 20;

export type { AppSeed };

export interface RedisRulesOptions {
  client: Redis;
  prefix: string;
  /** apps of the config file */
  apps: Readonly<Record<string, AppSeed>>;
  logger: Logger;
}

interface AppState {
  rules: Rule[];
  /** the JSON last read from Redis (valid or not), so one bad value is reported once */
  raw?: string;
  /** this app is known to Redis (rules or token) */
  shared: boolean;
}

export class RedisRules {
  readonly #client: Redis;
  readonly #rulesKey: string;
  readonly #tokensKey: string;
  readonly #channel: string;
  #config: Readonly<Record<string, AppSeed>>;
  readonly #logger: Logger;
  readonly #apps = new Map<string, AppState>();
  /** tokens read from Redis; win over the config file */
  #tokens = new Map<string, string>();
  #rawTokens = new Map<string, string>();
  readonly #listeners: ((app: string, rules: Rule[]) => void)[] = [];
  #warnedTooMany = false;
  /** reads and writes sent so far, numbered in send order (the connection's answer order) */
  #sent = 0;
  /** per app, the number of the read or write whose value is applied */
  readonly #appliedAt = new Map<string, number>();
  /** the number of the read the tokens are from */
  #tokensAt = 0;
  /** values from Redis that failed validation (kept out; counted for metrics) */
  rejected = 0;

  constructor(opts: RedisRulesOptions) {
    this.#client = opts.client;
    this.#rulesKey = `${opts.prefix}rules`;
    this.#tokensKey = `${opts.prefix}tokens`;
    this.#channel = `${opts.prefix}rules-changed`;
    this.#config = opts.apps;
    this.#logger = opts.logger;
    for (const [app, seed] of Object.entries(opts.apps))
      this.#apps.set(app, { rules: [...(seed.rules ?? [])], shared: false });
  }

  get channel(): string {
    return this.#channel;
  }

  onChange(listener: (app: string, rules: Rule[]) => void): void {
    this.#listeners.push(listener);
  }

  has(app: string): boolean {
    return this.#apps.has(app) || this.#tokens.has(app);
  }

  token(app: string): string | undefined {
    return this.#tokens.get(app) ?? this.#config[app]?.token;
  }

  apps(): string[] {
    const names = new Set(this.#apps.keys());
    for (const app of this.#tokens.keys()) names.add(app);
    return [...names].sort();
  }

  rules(app: string): Rule[] {
    return this.#apps.get(app)?.rules.slice() ?? [];
  }

  /** Validates (ValidationError naming the field), stores in Redis and tells every hub. */
  async set(app: string, input: unknown): Promise<Rule[]> {
    if (typeof app !== 'string' || app.length === 0 || app.length > MAX_NAME_LENGTH)
      throw new TypeError(`app must be a string of 1 to ${MAX_NAME_LENGTH} characters`);
    const rules = parseRules(input);
    if (!isReady(this.#client))
      throw new HotKeyError(ErrorCode.Unavailable, 'Redis is unreachable: rules cannot be stored now, try again');
    const raw = JSON.stringify(rulesForPeers(rules));
    const at = ++this.#sent;
    try {
      await this.#client.multi().hset(this.#rulesKey, app, raw).publish(this.#channel, app).exec();
    } catch (err) {
      throw new HotKeyError(ErrorCode.Unavailable, `storing rules in Redis failed: ${(err as Error).message}`, {
        cause: err,
      });
    }
    if (this.#fresh(app, at)) this.#accept(app, raw, rules);
    return rules;
  }

  /**
   * A reloaded config file: its tokens apply where Redis has none, and apps Redis does not know yet
   * take the file's rules and are seeded on the next (re)connect or now. What Redis holds still wins.
   */
  reconfigure(apps: Readonly<Record<string, AppSeed>>): void {
    this.#config = apps;
    for (const [app, seed] of Object.entries(apps)) {
      const state = this.#apps.get(app);
      if (state?.shared) continue;
      const rules = [...(seed.rules ?? [])];
      const changed = state === undefined || JSON.stringify(state.rules) !== JSON.stringify(rules);
      this.#apps.set(app, { rules, shared: false });
      if (changed) for (const listener of this.#listeners) listener(app, rules.slice());
    }
    if (isReady(this.#client))
      this.seed().catch((err: unknown) =>
        this.#logger.warn({ evt: 'redis_rules', err: String(err) }, 'seeding rules failed'),
      );
  }

  /** Writes the rules this hub knows for apps Redis has none of (after a start or a Redis restart). */
  async seed(): Promise<void> {
    const batch = this.#client.pipeline();
    for (const [app, state] of this.#apps)
      batch.hsetnx(this.#rulesKey, app, JSON.stringify(rulesForPeers(state.rules)));
    if (this.#apps.size > 0) await batch.exec();
  }

  /** Re-reads every app's rules and tokens. */
  async sync(): Promise<void> {
    const at = ++this.#sent;
    const [rulesReply, tokensReply] = await Promise.all([
      this.#client.hgetall(this.#rulesKey),
      this.#client.hgetall(this.#tokensKey),
    ]);
    let count = 0;
    for (const [app, raw] of Object.entries(rulesReply)) {
      if (++count > MAX_APPS) {
        this.#tooMany();
        break;
      }
      if (this.#fresh(app, at)) this.#apply(app, raw);
    }
    if (at < this.#tokensAt) return;
    this.#tokensAt = at;
    const tokens = new Map<string, string>();
    for (const [app, token] of Object.entries(tokensReply)) {
      if (tokens.size >= MAX_APPS) {
        this.#tooMany();
        break;
      }
      if (token.length === 0 || token.length > MAX_VALUE_LENGTH) {
        if (this.#rawTokens.get(app) !== token)
          this.#logger.warn(
            { evt: 'redis_rules' },
            `ignoring the token of app "${app}" in Redis ${this.#tokensKey}: must be 1 to ${MAX_VALUE_LENGTH} characters`,
          );
        continue;
      }
      tokens.set(app, token);
    }
    this.#rawTokens = new Map(Object.entries(tokensReply));
    this.#tokens = tokens;
  }

  /** Re-reads one app (after a rules-changed message). */
  async syncApp(app: string): Promise<void> {
    const at = ++this.#sent;
    const raw = await this.#client.hget(this.#rulesKey, app);
    if (raw !== null && this.#fresh(app, at)) this.#apply(app, raw);
  }

  /** Whether `app`'s value from read or write number `at` is no older than the applied one; it is applied next. */
  #fresh(app: string, at: number): boolean {
    if (at < (this.#appliedAt.get(app) ?? 0)) return false;
    this.#appliedAt.set(app, at);
    return true;
  }

  #apply(app: string, raw: string): void {
    const state = this.#apps.get(app);
    if (state?.raw === raw) return;
    if (!state && this.#apps.size >= MAX_APPS) return this.#tooMany();
    let rules: Rule[];
    try {
      if (raw.length > MAX_VALUE_LENGTH) throw new Error(`longer than ${MAX_VALUE_LENGTH} characters`);
      rules = parseRules(JSON.parse(raw));
    } catch (err) {
      this.rejected++;
      this.#logger.warn(
        { evt: 'redis_rules' },
        `rejected rules of app "${app}" in Redis ${this.#rulesKey}, keeping the previous ones: ${(err as Error).message}`,
      );
      if (state) state.raw = raw;
      else this.#apps.set(app, { rules: [...(this.#config[app]?.rules ?? [])], raw, shared: true });
      return;
    }
    this.#accept(app, raw, rules);
  }

  #accept(app: string, raw: string, rules: Rule[]): void {
    const state = this.#apps.get(app);
    const changed = !state || JSON.stringify(state.rules) !== JSON.stringify(rules);
    this.#apps.set(app, { rules, raw, shared: true });
    if (!changed) return;
    for (const listener of this.#listeners) listener(app, rules.slice());
  }

  #tooMany(): void {
    if (this.#warnedTooMany) return;
    this.#warnedTooMany = true;
    this.#logger.warn({ evt: 'redis_rules' }, `more than ${MAX_APPS} apps in Redis; the rest are ignored`);
  }
}
