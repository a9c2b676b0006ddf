/**
 * Sharded counters for write-hot numeric keys: a stock counter such as `item:stock:1001` split into
 * sub-keys (20, say) spread over the cluster's slots, so that its writes land on many masters, and
 * decremented by a Lua script that moves on to another shard when one is short.
 *
 * A counter is its base key plus N shard keys (hash-slots.ts `shardNames`: N equal slot ranges, so
 * the shards sit on different masters). Its value is base + Σ shards. Each operation is atomic on
 * one key; nothing ever spans two keys atomically (a cluster cannot), so the semantics are built
 * from single-key steps that never lose or duplicate a unit:
 * - `add(n)`: one INCRBY on a random shard.
 * - `take(n)`: a Lua script per key takes min(n, what the key holds) — never below zero — walking
 *   the shards from a random one, then the base key, until n are taken. All or nothing by
 *   default: if the walk comes up short, what was taken goes back (INCRBY on the same keys) and
 *   take resolves 0. Units are never duplicated; a process that dies between taking and giving
 *   back strands at most the units it took (they count as taken, as a crashed buyer's would).
 *   `{ partial: true }` keeps what it got instead: no give-back at all.
 * - `total()`: GET of every key, summed. Not a snapshot: a concurrent add or take may be counted
 *   or not, as it would be with one key read a moment earlier or later.
 * - `fold()`: moves every shard's units into the base key, exactly once even when several
 *   processes fold at once or one dies midway: a script moves a shard's value into a transfer
 *   record beside it (same slot) under a fresh id; a script on the base key's slot applies an id
 *   at most once (a marker key with a 1 h TTL); then the record goes. Every fold first finishes
 *   the records a crashed fold left. Units in flight between the two scripts are briefly not
 *   visible to `total()`.
 */
import { randomUUID } from 'node:crypto';
import { Script, type OwnSend } from './scripts.ts';
import { sameSlotName, shardNames } from '../hash-slots.ts';

/** takes min(ARGV[1], value) from KEYS[1], never below zero; returns what it took */
const TAKE = new Script(`local have = tonumber(redis.call('GET', KEYS[1]) or '0')
local want = tonumber(ARGV[1])
if have == nil then return redis.error_reply('ERR value is not an integer') end
if have <= 0 then return 0 end
local took = want < have and want or have
redis.call('DECRBY', KEYS[1], took)
return took`);

/** moves KEYS[1]'s value into record ARGV[1] of hash KEYS[2]; returns every pending record */
const FOLD_OUT = new Script(`local v = redis.call('GET', KEYS[1])
if v then
  redis.call('DEL', KEYS[1])
  local n = tonumber(v)
  if n == nil then return redis.error_reply('ERR value is not an integer') end
  if n ~= 0 then redis.call('HINCRBY', KEYS[2], ARGV[1], n) end
end
return redis.call('HGETALL', KEYS[2])`);

/** adds ARGV[2] to KEYS[1] unless transfer ARGV[1] was applied already (marker KEYS[2]) */
const FOLD_IN = new Script(`if redis.call('SET', KEYS[2], '1', 'NX', 'EX', 3600) then
  redis.call('INCRBY', KEYS[1], ARGV[2])
  return 1
end
return 0`);

export interface CounterOptions {
  /** shard keys, 1–1024; their slots spread evenly over the cluster's masters */
  shards: number;
}

export interface TakeOptions {
  /** keep a short take's units instead of giving them back (resolves what it got) @default false */
  partial?: boolean;
}

/** what a counter operation reports back to its owner (stats) */
export interface CounterStats {
  adds: number;
  takes: number;
  /** takes that came up short (0 returned, or less than asked with `partial`) */
  short: number;
  /** Lua steps past the first shard: how often a take had to move on */
  moves: number;
  folds: number;
}

export class ShardedCounter {
  readonly key: string;
  /** the shard key names, shard i in slot range i */
  readonly shards: readonly string[];
  readonly stats: CounterStats = { adds: 0, takes: 0, short: 0, moves: 0, folds: 0 };
  readonly #send: OwnSend;

  /** A counter whose commands go through `send` (an adapter's, past its hook). */
  constructor(send: OwnSend, key: string, options: CounterOptions) {
    if (typeof key !== 'string' || key.length === 0) throw new TypeError('counter: key must be a non-empty string');
    const n = options?.shards;
    if (!Number.isInteger(n) || n < 1 || n > 1024)
      throw new TypeError(`counter: shards must be an integer in 1..1024, got ${String(n)}`);
    if (sameSlotName(key, '') === undefined)
      throw new TypeError(`counter: key "${key}" holds a brace but no hash tag; its slot cannot be shared reliably`);
    this.#send = send;
    this.key = key;
    this.shards = shardNames(key, n);
  }

  /** Adds `n` (an integer, may be negative) to one random shard; resolves that shard's new value. */
  add(n = 1): Promise<number> {
    checkInt(n, 'add');
    this.stats.adds++;
    const shard = this.shards[randomIndex(this.shards.length)]!;
    return this.#send(shard, ['INCRBY', shard, n]).then(Number);
  }

  /**
   * Takes `n` units (an integer ≥ 1), never letting a key go below zero: resolves `n`, or 0 when
   * the counter holds fewer (then nothing is taken). With `{ partial: true }` resolves what it
   * could take, from 0 to n.
   */
  async take(n = 1, options: TakeOptions = {}): Promise<number> {
    checkInt(n, 'take');
    if (n < 1) throw new TypeError(`counter: take needs n >= 1, got ${n}`);
    this.stats.takes++;
    const start = randomIndex(this.shards.length);
    const order = [...this.shards.slice(start), ...this.shards.slice(0, start), this.key];
    const took: [string, number][] = [];
    let got = 0;
    for (let i = 0; i < order.length && got < n; i++) {
      if (i > 0) this.stats.moves++;
      const t = Number(await TAKE.run(this.#send, [order[i]!], [n - got]));
      if (t > 0) {
        took.push([order[i]!, t]);
        got += t;
      }
    }
    if (got === n) return n;
    this.stats.short++;
    if (options.partial === true) return got;
    // all or nothing: the units go back where they came from
    await Promise.all(took.map(([name, t]) => this.#send(name, ['INCRBY', name, t])));
    return 0;
  }

  /** base + Σ shards, read key by key (not a snapshot). */
  async total(): Promise<number> {
    const values = await Promise.all([this.key, ...this.shards].map((name) => this.#send(name, ['GET', name])));
    let sum = 0;
    for (const v of values) if (v !== null && v !== undefined) sum += Number(v);
    return sum;
  }

  /** Adds `n` spread evenly over the shards (for a stock's initial amount): one INCRBY per shard. */
  async fill(n: number): Promise<void> {
    checkInt(n, 'fill');
    const each = Math.trunc(n / this.shards.length);
    const rest = n - each * this.shards.length;
    await Promise.all(
      this.shards.map((name, i) => {
        const amount = each + (i < Math.abs(rest) ? Math.sign(rest) : 0);
        return amount === 0 ? Promise.resolve(0) : this.#send(name, ['INCRBY', name, amount]);
      }),
    );
  }

  /** Moves every shard's units into the base key, exactly once (see the module comment). */
  async fold(): Promise<void> {
    this.stats.folds++;
    const marker = (id: string) => sameSlotName(this.key, `:hk:applied:${id}`)!;
    await Promise.all(
      this.shards.map(async (shard) => {
        const records = `${shard}:hk:xfer`;
        const pending = ((await FOLD_OUT.run(this.#send, [shard, records], [randomUUID()])) ?? []) as unknown[];
        for (let i = 0; i + 1 < pending.length; i += 2) {
          const id = String(pending[i]);
          await FOLD_IN.run(this.#send, [this.key, marker(id)], [id, String(pending[i + 1])]);
          await this.#send(records, ['HDEL', records, id]);
        }
      }),
    );
  }
}

function checkInt(n: unknown, what: string): asserts n is number {
  if (typeof n !== 'number' || !Number.isSafeInteger(n))
    throw new TypeError(`counter: ${what} needs an integer, got ${String(n)}`);
}

function randomIndex(n: number): number {
  return Math.floor(Math.random() * n);
}
