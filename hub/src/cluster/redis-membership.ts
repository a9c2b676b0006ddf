/**
 * Cluster membership in Redis. Each hub heartbeats `{id, url}`; the list carries an epoch that
 * grows with every change, so SDKs can tell a newer list from an older one.
 *
 * Layout (prefix `hotkey:`):
 *   members       sorted set  id -> expiry (ms, Redis server clock, so hub clocks may drift)
 *   member-urls   hash        id -> ws:// URL
 *   epoch         counter     bumped by every change
 *   member-since  hash        id -> registration time (ms, Redis clock), 0 once its alive:<id>
 *                             subscription has been seen
 *   members-changed  channel  the new epoch, published on every change
 *   alive:<id>    channel     each hub's subscriber connection stays subscribed to its own
 *
 * A hub killed outright (kill -9) loses its Redis connections at once, and with them its
 * subscription to `alive:<id>`: the next heartbeat of any hub drops it (PUBSUB NUMSUB = 0), so
 * failover does not wait for the TTL. Each hub's own heartbeat vouches for its subscription (sets
 * member-since to 0 once NUMSUB sees it); until then a member gets one TTL after registering to
 * subscribe. The TTL still removes a hub that hangs with its connections open.
 *
 * One Lua script does register / leave / sweep atomically and returns the live list, so two
 * hubs sweeping the same dead member bump the epoch once, and a heartbeat is one round trip.
 * Redis restarts empty (nothing persisted): the script never lets the epoch go below the one the
 * caller knew, and the first heartbeat after a reconnect re-adds the members this hub knew (NX:
 * never extending a live one) so ownership does not flap while the hubs re-register; a member
 * that died meanwhile expires one TTL later.
 */
import type { Member } from '@hotkey/sdk/protocol';
import type { Redis } from './redis-client.ts';

/** members beyond this are not listed (the wire protocol's limit for a Members frame) */
export const MAX_MEMBERS = 1024;

const MEMBERSHIP_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id, url, ttl, known, channel, mode = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], ARGV[6]
local epoch = tonumber(redis.call('GET', KEYS[3]) or '0')
if epoch < known then
  epoch = known
  redis.call('SET', KEYS[3], epoch)
end
local alive = ARGV[7]
local changed = false
local function drop(gone)
  redis.call('ZREM', KEYS[1], gone)
  redis.call('HDEL', KEYS[2], gone)
  redis.call('HDEL', KEYS[4], gone)
  changed = true
end
if mode == 'leave' then
  if redis.call('ZSCORE', KEYS[1], id) then drop(id) end
else
  if redis.call('ZADD', KEYS[1], now + ttl, id) == 1 then
    redis.call('HSET', KEYS[4], id, now)
    changed = true
  end
  if redis.call('HGET', KEYS[2], id) ~= url then
    redis.call('HSET', KEYS[2], id, url)
    changed = true
  end
  -- the caller's alive subscription is up: from now on its absence means the hub is gone, with
  -- no grace period (a hub killed a second after joining is dropped at the next heartbeat too)
  if redis.call('PUBSUB', 'NUMSUB', alive .. id)[2] > 0 then redis.call('HSET', KEYS[4], id, 0) end
  if mode == 'rejoin' then
    for i = 8, #ARGV, 2 do
      if redis.call('ZADD', KEYS[1], 'NX', now + ttl, ARGV[i]) == 1 then
        redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
        redis.call('HSET', KEYS[4], ARGV[i], now)
        changed = true
      end
    end
  end
end
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do drop(gone) end
-- A member registered for longer than a TTL whose presence subscription is gone has lost its
-- connections to Redis (killed): drop it now rather than when its entry expires.
for _, other in ipairs(redis.call('ZRANGE', KEYS[1], 0, ${MAX_MEMBERS - 1})) do
  if other ~= id and tonumber(redis.call('HGET', KEYS[4], other) or '0') < now - ttl
      and redis.call('PUBSUB', 'NUMSUB', alive .. other)[2] == 0 then
    drop(other)
  end
end
if changed then
  epoch = redis.call('INCR', KEYS[3])
  redis.call('PUBLISH', channel, epoch)
end
local out = { epoch }
for _, live in ipairs(redis.call('ZRANGE', KEYS[1], 0, ${MAX_MEMBERS - 1})) do
  out[#out + 1] = live
  out[#out + 1] = redis.call('HGET', KEYS[2], live) or ''
end
return out
`;

type Mode = 'beat' | 'rejoin' | 'leave';

interface MembershipCommands {
  hkMembership(
    members: string,
    urls: string,
    epoch: string,
    since: string,
    ...args: (string | number)[]
  ): Promise<unknown>;
}

export interface RedisMembershipOptions {
  client: Redis;
  prefix: string;
  self: Member;
  /** a member not heard of for this long is dropped */
  ttlMs: number;
}

export class RedisMembership {
  readonly #client: Redis & MembershipCommands;
  readonly #keys: [string, string, string, string];
  readonly #channel: string;
  readonly #alivePrefix: string;
  readonly #ttlMs: number;
  #self: Member;
  #epoch = 0;
  #members: Member[];
  #signature: string;
  #left = false;
  #queue: Promise<void> = Promise.resolve();
  readonly #listeners: ((epoch: number, members: Member[]) => void)[] = [];
  /** Date.now() of the last heartbeat Redis answered */
  lastBeatAt = 0;

  constructor(opts: RedisMembershipOptions) {
    this.#client = opts.client as Redis & MembershipCommands;
    if (typeof this.#client.hkMembership !== 'function') {
      this.#client.defineCommand('hkMembership', { lua: MEMBERSHIP_LUA, numberOfKeys: 4 });
    }
    this.#keys = [
      `${opts.prefix}members`,
      `${opts.prefix}member-urls`,
      `${opts.prefix}epoch`,
      `${opts.prefix}member-since`,
    ];
    this.#channel = `${opts.prefix}members-changed`;
    this.#alivePrefix = `${opts.prefix}alive:`;
    this.#ttlMs = opts.ttlMs;
    this.#self = opts.self;
    this.#members = [opts.self];
    this.#signature = signature(this.#members);
  }

  get channel(): string {
    return this.#channel;
  }

  /** The hub's subscriber listens here: Redis drops the subscription the moment the hub dies. */
  get aliveChannel(): string {
    return `${this.#alivePrefix}${this.#self.id}`;
  }

  get left(): boolean {
    return this.#left;
  }

  snapshot(): { epoch: number; members: Member[] } {
    return { epoch: this.#epoch, members: this.#members.slice() };
  }

  onChange(listener: (epoch: number, members: Member[]) => void): void {
    this.#listeners.push(listener);
  }

  /** Refreshes this hub's entry and sweeps the dead; `rejoin` also re-adds the members we knew. */
  async beat(rejoin = false): Promise<void> {
    if (this.#left) return;
    const extra: string[] = [];
    if (rejoin) for (const m of this.#members) if (m.id !== this.#self.id) extra.push(m.id, m.url);
    await this.#run(rejoin ? 'rejoin' : 'beat', extra);
  }

  /** Removes this hub from the list; later beats do nothing. */
  async leave(): Promise<void> {
    if (this.#left) return;
    this.#left = true;
    try {
      await this.#run('leave', []);
    } finally {
      // Whatever Redis said, this hub no longer counts itself a member: the hub core tells its
      // SDKs the list without it before closing their sockets.
      const rest = this.#members.filter((m) => m.id !== this.#self.id);
      if (rest.length !== this.#members.length) this.#apply(this.#epoch + 1, rest, true);
    }
  }

  /** Runs one script call after the previous one: a heartbeat in flight must not re-add a hub that left. */
  #run(mode: Mode, extra: string[]): Promise<void> {
    const run = this.#queue.then(() => (mode !== 'leave' && this.#left ? undefined : this.#call(mode, extra)));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #call(mode: Mode, extra: string[]): Promise<void> {
    const reply = await this.#client.hkMembership(
      ...this.#keys,
      this.#self.id,
      this.#self.url,
      this.#ttlMs,
      this.#epoch,
      this.#channel,
      mode,
      this.#alivePrefix,
      ...extra,
    );
    this.lastBeatAt = Date.now();
    if (!Array.isArray(reply) || typeof reply[0] !== 'number')
      throw new Error('membership script returned an unexpected reply');
    const members: Member[] = [];
    for (let i = 1; i + 1 < reply.length; i += 2) members.push({ id: String(reply[i]), url: String(reply[i + 1]) });
    this.#apply(reply[0], members, mode === 'leave');
  }

  #apply(epoch: number, members: Member[], leaving: boolean): void {
    // A reply older than what we hold (a slow heartbeat racing a pub/sub-triggered one) is ignored.
    if (epoch < this.#epoch) return;
    if (!leaving && !members.some((m) => m.id === this.#self.id)) members.push(this.#self);
    if (leaving) members = members.filter((m) => m.id !== this.#self.id);
    members.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const sig = signature(members);
    if (epoch === this.#epoch && sig === this.#signature) return;
    this.#epoch = epoch;
    this.#members = members;
    this.#signature = sig;
    for (const listener of this.#listeners) listener(epoch, members.slice());
  }
}

function signature(members: readonly Member[]): string {
  return members.map((m) => `${m.id}\u0000${m.url}`).join('\u0001');
}
