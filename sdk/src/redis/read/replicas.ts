/**
 * Replica keys: a read-hot key that is not cached locally (a rule with `cache: false`) is copied
 * to replica keys on other Redis Cluster masters, and the wrapper spreads its GETs over the key
 * and its copies, so one hot key no longer puts all its reads on one node. Client-agnostic: an
 * adapter lends its slot map, a way to send GET / SET / DEL / PTTL to a key's node past its hook
 * and its tracking (`ReplicaNodes`); everything else is here.
 *
 * - How many: the hub sizes the copies from the key's cluster QPS (rules.ts replicaCount, sent
 *   with the promotion, re-sent when it crosses a step). The key itself is copy 0; copies beyond
 *   the number of masters are not used (they could only share a master).
 * - Where: copy c is named `hkr{<tag>}:<key>`. The `{tag}` comes first in the name, so it alone
 *   picks the slot (hash-slots.ts): tags `<slot of key>.<c>.<j>` are tried for j = 0, 1, … until the
 *   slot's master (the client's slot map) is one no earlier copy uses. Names depend only on the
 *   key, the copy and the slot map, so every instance names the same keys. On standalone Redis
 *   every copy lives on the one server (nothing to spread; it works the same way).
 * - Reads: only GET (string reply) of such a key is replica-served. A GET picks a copy at random;
 *   a copy that exists answers it; a missing one is filled: the primary is read (value and PTTL in
 *   one round trip, tracked through Redis server-assisted tracking when that is on) and written
 *   to the copy with `SET … PX min(ttlMs, pttl) NX`, one fill per copy per instance at a time.
 *   A copy lives `ttlMs` (default 2 s) from its fill, then the next read refills it: copies of a
 *   hot key are renewed by reading it, and never hold a value older than `ttlMs` whoever wrote.
 * - Writes through the wrapper: a written key's copies are deleted after the hub acknowledged the
 *   invalidation and before the write settles. Every instance voids a fill in flight when it
 *   applies the invalidation (and fills only while its hub's lease vouches for the key, by the
 *   real clock), so no fill of a value read before the write can land after the delete.
 * - Writes from elsewhere: a fill read under tracking makes Redis tell this instance when the key
 *   is written; the instance then voids its fills and deletes the copies.
 * - Demotion: the copies are deleted (and expire within `ttlMs` anyway).
 *
 * The bound (docs/concepts/redis-keys.md): a GET served by a copy that starts after a write through the
 * wrapper settled returns that write's value or a newer one; after a write from elsewhere, a copy
 * serves the old value until tracking drops it (milliseconds) and at most `ttlMs` (tracking off,
 * or its connection lost). During a resharding two instances may name copies differently for a
 * moment: the `ttlMs` bound holds regardless.
 */
import { adapterView, type AdapterView } from '../../client/adapter-view.ts';
import type { HotKeyClient } from '../../client/client.ts';
import { RuleSet, REPLICA_DEFAULTS, type Rule } from '../../rules.ts';
import type { RedisCommand } from '../command.ts';
import { hashSlot } from '../hash-slots.ts';
import type { Tracking } from '../tracking/tracking.ts';

/** a replica key lives this long from its fill unless set otherwise @default 2000 */
export const REPLICA_TTL_MS = 2000;
const MAX_TAG_PROBES = 4096;
/** keys whose copy names are remembered at most (recomputed after) */
const MAX_NAMED_KEYS = 10_000;

export interface ReplicaOptions {
  /** a copy lives this long from its fill (renewed by the reads that refill it), 100 to 60000 @default 2000 */
  ttlMs?: number;
}

/**
 * The `replicas` option of `withHotKeys`, checked: `undefined` or `true` is on with the defaults,
 * `false` off (undefined returned). Anything else, or an unknown or bad field, is a TypeError
 * naming it.
 */
export function replicaOptions(raw: unknown): ReplicaOptions | undefined {
  if (raw === false) return undefined;
  if (raw === undefined || raw === true) return {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new TypeError(`withHotKeys: replicas must be true, false or { ttlMs }, got ${String(raw)}`);
  for (const field of Object.keys(raw))
    if (field !== 'ttlMs') throw new TypeError(`withHotKeys: replicas.${field} is not an option (replicas: { ttlMs })`);
  checkTtl((raw as ReplicaOptions).ttlMs ?? REPLICA_TTL_MS);
  return raw as ReplicaOptions;
}

function checkTtl(ttlMs: unknown): asserts ttlMs is number {
  if (!Number.isInteger(ttlMs) || (ttlMs as number) < 100 || (ttlMs as number) > 60_000)
    throw new TypeError(`withHotKeys: replicas.ttlMs must be an integer from 100 to 60000, got ${String(ttlMs)}`);
}

/** What an adapter lends replica keys: its slot map and its client's dispatch, past its hook. */
export interface ReplicaNodes {
  readonly isCluster: boolean;
  /** the master (`host:port`) serving `slot` by the client's slot map; undefined while unknown (and on standalone Redis) */
  masterOf(slot: number): string | undefined;
  /** masters in the slot map (a Cluster) */
  masterCount(): number;
  /** sends a command of ours to the node of its key (args[0]), past the hook: counted and invalidated by nobody */
  send(name: 'get' | 'set' | 'del' | 'pttl', args: unknown[], replyEncoding: string | null): Promise<unknown>;
  /** the database of tracked reads (standalone Redis); undefined on a Cluster */
  db(): number | undefined;
}

/** Reads of the primary for a fill: value and PTTL in one round trip, tracked when it can be. */
type PrimaryRead = (key: string) => Promise<{ value: unknown; pttl: unknown }>;

/** The primary's value and PTTL: through its node's tracking session when live, else GET and PTTL side by side. */
function primaryReader(nodes: ReplicaNodes, tracking: Tracking | undefined): PrimaryRead {
  const plain = (key: string) =>
    Promise.all([nodes.send('get', [key], 'utf8'), nodes.send('pttl', [key], 'utf8')]).then(([value, pttl]) => ({
      value,
      pttl,
    }));
  return (key) => {
    const node = tracking?.nodeFor(key);
    if (!node?.session.live) return plain(key);
    return node.load('get', key, nodes.db()).then(
      (read) => read,
      () => plain(key),
    );
  };
}

interface Fill {
  voided: boolean;
}

/**
 * What every wrapped client of one HotKeyClient shares: fills in flight, voided by invalidations
 * and demotions. (Each client's copies hear the demotion as a member of its wrap, wrap-events.ts.)
 */
class Flights {
  readonly #byKey = new Map<string, Set<Fill>>();

  constructor(hk: HotKeyClient) {
    hk.on('invalidate', (key) => this.void(key));
    hk.on('demote', (key) => this.void(key));
  }

  start(key: string): Fill {
    const fill = { voided: false };
    let set = this.#byKey.get(key);
    if (set === undefined) this.#byKey.set(key, (set = new Set()));
    set.add(fill);
    return fill;
  }

  end(key: string, fill: Fill): void {
    const set = this.#byKey.get(key);
    if (set === undefined) return;
    set.delete(fill);
    if (set.size === 0) this.#byKey.delete(key);
  }

  void(key: string): void {
    const set = this.#byKey.get(key);
    if (set === undefined) return;
    for (const fill of set) fill.voided = true;
    this.#byKey.delete(key);
  }
}
const flightsOf = new WeakMap<HotKeyClient, Flights>();

export interface ReplicaStats {
  /** GETs answered by a copy */
  hits: number;
  /** GETs sent to a copy that did not exist (then answered by the primary) */
  misses: number;
  /** GETs that picked the primary itself */
  primary: number;
  /** copies written from the primary */
  fills: number;
  /** fills not written: an invalidation, a demotion or a lapsed lease came first */
  voided: number;
  /** copies deleted (writes, outside writes heard through tracking, demotions) */
  deleted: number;
}

export class Replicas {
  readonly stats: ReplicaStats = { hits: 0, misses: 0, primary: 0, fills: 0, voided: 0, deleted: 0 };
  readonly #hk: HotKeyClient;
  readonly #view: AdapterView;
  readonly #nodes: ReplicaNodes;
  readonly #isCluster: boolean;
  readonly #ttlMs: number;
  readonly #send: ReplicaNodes['send'];
  readonly #readPrimary: PrimaryRead;
  readonly #flights: Flights;
  /** key -> copy names (index c - 1) with the master each was placed on */
  readonly #names = new Map<string, { name: string; master: string | undefined }[]>();
  /** copy names with a fill in flight here */
  readonly #filling = new Set<string>();
  #ruleSource: readonly Rule[] | undefined;
  #rules = new RuleSet([]);

  /** @param tracking the adapter's tracking (fills read under it), undefined when off */
  constructor(hk: HotKeyClient, nodes: ReplicaNodes, tracking: Tracking | undefined, options: ReplicaOptions = {}) {
    const ttlMs = options.ttlMs ?? REPLICA_TTL_MS;
    checkTtl(ttlMs);
    this.#hk = hk;
    this.#view = adapterView(hk);
    this.#nodes = nodes;
    this.#isCluster = nodes.isCluster;
    this.#ttlMs = ttlMs;
    this.#send = (name, args, replyEncoding) => nodes.send(name, args, replyEncoding);
    this.#readPrimary = primaryReader(nodes, tracking);
    let flights = flightsOf.get(hk);
    if (flights === undefined) flightsOf.set(hk, (flights = new Flights(hk)));
    this.#flights = flights;
  }

  /** The key is no longer hot here: its copies go (they would expire within ttlMs anyway). */
  demoted(key: string): void {
    void this.#delete(key);
  }

  /** Copies serving reads of `key` now, itself included (1: read the key as usual). */
  copies(key: string): number {
    const n = this.#view.replicasOf(key);
    if (n <= 1) return 1;
    if (!this.#isCluster) return n;
    const masters = this.#masterCount();
    return masters === 0 ? 1 : Math.min(n, masters);
  }

  /** Answers a GET of a key with `copies` > 1 (its access is counted by the caller). */
  read(key: string, command: RedisCommand, copies: number): void {
    const c = Math.floor(Math.random() * copies);
    const names = c === 0 ? undefined : this.names(key, copies - 1);
    const copy = names?.[c - 1];
    if (copy === undefined) {
      this.stats.primary++;
      this.#fromPrimary(key, command, undefined);
      return;
    }
    this.#send('get', [copy], command.replyEncoding ?? null).then(
      (value) => {
        if (value !== null) {
          this.stats.hits++;
          command.resolve(value);
          return;
        }
        this.stats.misses++;
        this.#fromPrimary(key, command, copy);
      },
      () => this.#fromPrimary(key, command, undefined), // a copy's node failing must not fail the read
    );
  }

  /**
   * Keys written through the wrapper whose invalidation the hub acknowledged: voids fills in
   * flight here and deletes their copies; resolves once Redis deleted them.
   */
  async written(keys: Iterable<string>): Promise<void> {
    const done: Promise<unknown>[] = [];
    for (const key of keys) {
      this.#flights.void(key);
      done.push(this.#delete(key));
    }
    await Promise.all(done);
  }

  /** A write from elsewhere, heard through tracking. */
  outsideWrite(key: string): void {
    this.#flights.void(key);
    void this.#delete(key);
  }

  /**
   * The names of copies 1..count of `key` (fewer when no master is left to place one on), each on
   * a master no earlier copy (nor the key) uses; undefined while a Cluster's slot map is unknown.
   */
  names(key: string, count: number): string[] | undefined {
    let cached = this.#names.get(key);
    if (cached !== undefined && cached.length >= count && this.#placementHolds(cached, count))
      return cached.slice(0, count).map((c) => c.name);
    const base = hashSlot(key);
    const used = new Set<string>();
    const primary = this.#masterOf(base);
    if (this.#isCluster && primary === undefined) return undefined;
    if (primary !== undefined) used.add(primary);
    cached = [];
    for (let c = 1; c <= count; c++) {
      let placed = false;
      for (let j = 0; j < MAX_TAG_PROBES && !placed; j++) {
        const tag = `${base}.${c}.${j}`;
        const master = this.#masterOf(hashSlot(tag));
        if (master !== undefined && used.has(master)) continue;
        if (master !== undefined) used.add(master);
        cached.push({ name: `hkr{${tag}}:${key}`, master });
        placed = true;
      }
      if (!placed) break;
    }
    if (this.#names.size >= MAX_NAMED_KEYS) this.#names.clear();
    this.#names.set(key, cached);
    return cached.map((c) => c.name);
  }

  /**
   * The primary answers the read: a plain GET (one command), or, to fill a missing `copy` (once
   * per copy per instance at a time), the value and its PTTL read under tracking.
   */
  #fromPrimary(key: string, command: RedisCommand, copy: string | undefined): void {
    const fill = copy !== undefined && !this.#filling.has(copy) ? this.#flights.start(key) : undefined;
    if (fill === undefined) {
      this.#send('get', [key], command.replyEncoding ?? null).then(
        (value) => command.resolve(value),
        (err: Error) => command.reject(err),
      );
      return;
    }
    this.#filling.add(copy!);
    this.#readPrimary(key).then(
      ({ value, pttl }) => {
        command.resolve(value);
        this.#filling.delete(copy!);
        this.#flights.end(key, fill);
        // a value read before an invalidation this instance applied, or read while its hub's lease
        // may have lapsed (a stall: the hub may have acked a write without us), is not published
        if (fill.voided || !this.#view.vouches(key) || this.copies(key) <= 1) {
          this.stats.voided++;
          return;
        }
        if (value === null || value === undefined || pttl === -2) return;
        if (typeof value === 'string' && value.includes('\uFFFD')) return; // not a faithful copy of binary data
        const ms = typeof pttl === 'number' && pttl >= 0 ? Math.min(this.#ttlMs, pttl) : this.#ttlMs;
        if (ms <= 0) return;
        // counted once Redis wrote it: a second fill of a copy (a GET that missed it before this
        // SET landed) is refused by NX and is no copy written
        this.#send('set', [copy, value, 'PX', ms, 'NX'], 'utf8').then(
          (reply) => {
            if (reply === 'OK') this.stats.fills++;
          },
          () => {},
        );
      },
      (err: Error) => {
        this.#filling.delete(copy!);
        this.#flights.end(key, fill);
        command.reject(err);
      },
    );
  }

  /** Deletes every copy a rule could have made of `key` (fire and forget callers ignore failures). */
  #delete(key: string): Promise<unknown> {
    const rule = this.#ruleFor(key);
    if (rule === undefined || rule.cache || rule.replicas === false) return Promise.resolve();
    let extra = (rule.replicas ?? REPLICA_DEFAULTS).max - 1;
    if (this.#isCluster) extra = Math.min(extra, this.#masterCount() - 1);
    const names = extra > 0 ? (this.names(key, extra) ?? []) : [];
    return Promise.all(
      names.map((name) =>
        this.#send('del', [name], 'utf8').then(
          (n) => {
            if (n === 1) this.stats.deleted++;
          },
          () => {},
        ),
      ),
    );
  }

  #ruleFor(key: string): Rule | undefined {
    const source = this.#hk.rules();
    if (source !== this.#ruleSource) {
      this.#ruleSource = source;
      this.#rules = new RuleSet(source);
    }
    return this.#rules.ruleFor(key);
  }

  #masterOf(slot: number): string | undefined {
    return this.#isCluster ? this.#nodes.masterOf(slot) : undefined;
  }

  #masterCount(): number {
    return this.#nodes.masterCount();
  }

  /** The copies still sit on the masters they were placed on (slots move in a resharding). */
  #placementHolds(cached: { name: string; master: string | undefined }[], count: number): boolean {
    if (!this.#isCluster) return true;
    for (let i = 0; i < count; i++) {
      const c = cached[i]!;
      if (this.#masterOf(hashSlot(c.name)) !== c.master) return false;
    }
    return true;
  }
}
