/**
 * Local surges: a key that surges on this instance is served from the local cache before the
 * hub's cluster-wide promotion arrives (detection takes a report interval and the owner hub's
 * window; a flash key's first reads would all reach the store meanwhile).
 *
 * Why it is safe: consistency never rested on a key being hot. Every write through the SDK is an
 * invalidation that the key's owner hub broadcasts to every instance of the app, and acks only
 * once each applied it or was fenced (its lease lapsed). So an instance holding a current lease
 * from the key's owner hub hears every acked write of the key, hot or not — the same check a hot
 * key's hit makes (client.ts get()). A local entry is therefore an ordinary hot-set entry with
 * `local` set, owned by the key's owner hub and served under that link's lease; the read path,
 * single flight, invalidations, a lost hub, a sequence gap and a reconnect treat it like any hot
 * key. Writes from outside the SDK reach it as they reach hot keys: the adapter loads hot keys
 * through its Redis tracking connection and drops what that connection can no longer vouch for.
 *
 * Bounded: at most `maxKeys` local entries and `maxBytes` (estimated) of their values; a
 * surge past either is not served locally. Each lives `confirmWindows` windows of its rule unless
 * the hub promotes it (the entry then simply becomes the hub's: same lease, value kept); one
 * that expires unconfirmed is not promoted locally again for `retryMs`, so a key that is busy
 * only here does not end up cached by this instance alone for good. Surge level per rule: its
 * threshold scaled to a 1 s window, times the surge fraction (`fraction`), within one slice of the
 * access window, and at least `minAccesses`; or, when set, `jobAccesses` cold reads of the key within one synchronous
 * job (counted until the job's end, a microtask): a flash key's first tick of reads is one job,
 * while a busy key of an ordinary Zipf head is read once or twice per job; or an adapter's read
 * of the key while earlier cold reads of it are still unanswered by Redis: the key is read faster
 * than one round trip here. Reads arriving one per event-loop turn then cost a key this instance
 * was not counting two GETs: the first goes out untracked (only keys this instance caches are
 * tracked, so that Redis's tracking table holds hot keys, not every key read), the second is the
 * tracked load. A key counted already (an ordinary Zipf head is, and two of its reads overlap
 * now and then, more often the slower Redis answers) needs two reads in flight, which its
 * traffic rarely has: three GETs.
 */
import type { HotSet, HotState } from '../../cache/hot-set.ts';
import type { AccessWindow } from '../../counting/window.ts';
import type { ResolvedSurgeLocal } from '../../options.ts';
import type { RuleSet } from '../../rules.ts';
import { Holds } from '../invalidate/holds.ts';
import type { HubLinks } from '../links.ts';

/** keys remembered as not confirmed by their hub (retryMs) at most; the oldest is forgotten first */
const MAX_DECLINED = 1024;
/** a job's first reads of keys without a counter, remembered at most; past it such a read is not (the key's job count starts at its next read) */
const MAX_JOB_KEYS = 4096;
/** an estimate's walk into nested values stops this deep and after this many fields */
const SIZE_DEPTH = 4;
const SIZE_FIELDS = 256;

export interface SurgeLocalDeps {
  options: Readonly<ResolvedSurgeLocal>;
  window: AccessWindow;
  hot: HotSet;
  /** the hub links (built after this part) */
  links: () => HubLinks;
  /** drops what the client holds for a key that is no longer hot here */
  forget: (key: string) => void;
  /** protocol 3: registers a new entry with its owner hub before it is served (holds.ts) */
  holds?: Holds;
  /** the write clock when `key`'s kept cold read was sent, if one is kept (recent-reads.ts) */
  sinceOf?: (key: string) => number | undefined;
}

export class SurgeLocal {
  readonly #o: SurgeLocalDeps;
  readonly #window: AccessWindow;
  readonly #maxKeys: number;
  /** local entries not confirmed yet, with their values' estimated size */
  readonly #keys = new Map<string, { state: HotState; bytes: number }>();
  /** keys whose local entry expired unconfirmed: clock time before which they are not promoted again */
  readonly #declined = new Map<string, number>();
  #bytes = 0;
  /** surge level per rule index in counted (sampled) accesses, for `#levelsOf` rules (Infinity: never) */
  #levels: number[] = [];
  /** the same within one job (jobAccesses) */
  #jobLevels: number[] = [];
  /**
   * Job counts per counter slot of the window, so that an access of a counted key costs a few
   * typed-array reads, not a Map update: the job the count belongs to (`#epoch`), the count, and
   * the key it counts (a slot the window recycles within one job starts again).
   */
  #slotJob = new Int32Array(0);
  #slotCount = new Int32Array(0);
  #slotKey: Array<string | undefined> = [];
  /** the current synchronous job's number; its end (a microtask) moves to the next */
  #epoch = 1;
  #endQueued = false;
  /** the job's first reads of keys with no counter yet (such an access enters the sketch only) */
  readonly #firstReads = new Set<string>();
  #levelsOf: RuleSet | undefined;

  /** keys promoted here before their hub did */
  promotions = 0;
  /** of those, promoted by their hub while local */
  confirmed = 0;
  /** of those, dropped: unconfirmed in time, over maxBytes, or gone from the hot set */
  dropped = 0;

  constructor(deps: SurgeLocalDeps) {
    this.#o = deps;
    this.#window = deps.window;
    this.#maxKeys = deps.options.maxKeys;
  }

  /** local entries now */
  get size(): number {
    return this.#keys.size;
  }

  /**
   * An access of `key` (not hot here) was counted at `slot`: promotes it locally if it reached
   * its rule's surge level in the current slice, or its job level, or when it is read faster
   * than one round trip: `inFlight` of its adapter reads are unanswered, two or more, or one for
   * a key this instance was not counting before (this access gave it its counter). Returns its
   * new hot-set entry, or undefined.
   */
  check(key: string, slot: number, clock: number, inFlight = 0): HotState | undefined {
    // every cold access comes here (an adapter's track(), get() of a key not hot): a few array reads
    const window = this.#window;
    if (slot < 0) {
      // not counted exactly yet (a key's first access enters the sketch only): its job count still
      // starts here, so that `jobAccesses` reads of a new key in one job are that many, not one more
      if (this.#o.options.jobAccesses > 0) this.#firstRead(key);
      return undefined;
    }
    if (this.#keys.size >= this.#maxKeys) return undefined;
    const rule = window.ruleAt(slot);
    if (rule < 0) return undefined;
    const rules = window.rules;
    if (rules !== this.#levelsOf) this.#computeLevels(rules);
    const level = this.#levels[rule]!;
    // read faster than a round trip, or at its level: either surges it (a counted key with one
    // read unanswered still surges on its slice count)
    const concurrent =
      inFlight > 0 && level !== Infinity && (inFlight >= 2 || window.count(key) * window.rateOfRule(rule) <= 1);
    if (!concurrent && !(window.sliceCountAt(slot) >= level) && !this.#inJob(slot, key, this.#jobLevels[rule]!))
      return undefined;
    return this.#promote(key, rules.rules[rule]!, clock);
  }

  /** Counts a cold access of counted `key` (at `slot`) in the current job: whether the job's count reached `level`. */
  #inJob(slot: number, key: string, level: number): boolean {
    return level !== Infinity && this.#countAt(slot, key) >= level;
  }

  /** The job's count of `key` at `slot`, this access included (and a read of it in this job before it had a slot). */
  #countAt(slot: number, key: string): number {
    if (!this.#endQueued) this.#queueEnd();
    if (slot >= this.#slotJob.length) this.#grow(slot);
    if (this.#slotJob[slot] === this.#epoch && this.#slotKey[slot] === key) return ++this.#slotCount[slot]!;
    this.#slotJob[slot] = this.#epoch;
    this.#slotKey[slot] = key;
    const n = this.#firstReads.size > 0 && this.#firstReads.has(key) ? 2 : 1;
    this.#slotCount[slot] = n;
    return n;
  }

  /** A read of `key`, which has no counter yet, in the current job. */
  #firstRead(key: string): void {
    if (!this.#endQueued) this.#queueEnd();
    if (this.#firstReads.size < MAX_JOB_KEYS) this.#firstReads.add(key);
  }

  #queueEnd(): void {
    this.#endQueued = true;
    queueMicrotask(() => this.#endJob());
  }

  #endJob(): void {
    this.#endQueued = false;
    this.#epoch = (this.#epoch + 1) | 0 || 1;
    this.#firstReads.clear();
  }

  /** Room for `slot` in the per-slot job counts, at least doubled (slots are bounded by the window's candidates). */
  #grow(slot: number): void {
    const size = Math.max(64, this.#slotJob.length * 2, slot + 1);
    const job = new Int32Array(size);
    job.set(this.#slotJob);
    const count = new Int32Array(size);
    count.set(this.#slotCount);
    this.#slotJob = job;
    this.#slotCount = count;
  }

  #promote(key: string, rule: { windowMs: number; cacheTtlMs: number }, clock: number): HotState | undefined {
    const o = this.#o;
    // the key count was checked by check(), its one caller, before the slice count
    if (this.#bytes >= o.options.maxBytes) return undefined;
    if (o.hot.get(key) !== undefined || o.hot.size >= o.hot.maxKeys) return undefined;
    const declined = this.#declined.get(key);
    if (declined !== undefined) {
      if (clock < declined) return undefined;
      this.#declined.delete(key);
    }
    // served under the lease of the hub that would promote it: the one that relays its writes
    const link = o.links().ownerLink(key);
    if (link === undefined || !(link.lease.until > clock)) return undefined;
    const { state } = o.hot.promote(
      link.hub,
      key,
      { ttlMs: o.options.confirmWindows * rule.windowMs, cacheTtlMs: rule.cacheTtlMs, cache: true, qps: 0 },
      clock,
      link.lease,
    );
    state.local = true;
    // protocol 3: the owner hub sends writes of this key to its holders only, so it must record
    // this one before anything of it is served here; the load starts now and waits for the answer
    if (o.holds !== undefined && Holds.needed(link)) o.holds.register(link, state, o.sinceOf?.(key) ?? link.w);
    this.#keys.set(key, { state, bytes: 0 });
    this.promotions++;
    return state;
  }

  #computeLevels(rules: RuleSet): void {
    const { fraction, minAccesses, jobAccesses } = this.#o.options;
    // a sampled window counts a fraction of the accesses: so does a level
    const sampled = (level: number, i: number) => Math.max(1, Math.ceil(level * this.#window.rateOfRule(i)));
    const caches = (r: RuleSet['rules'][number]) => r.cache && r.cacheTtlMs > 0;
    this.#levels = rules.rules.map((r, i) =>
      caches(r) ? sampled(Math.max(minAccesses, Math.ceil((fraction * r.threshold * 1000) / r.windowMs)), i) : Infinity,
    );
    this.#jobLevels = rules.rules.map((r, i) =>
      caches(r) && jobAccesses > 0 ? sampled(Math.max(minAccesses, jobAccesses), i) : Infinity,
    );
    this.#levelsOf = rules;
  }

  /** A load filled `key`'s value: a local entry's size counts against maxBytes, past which it goes. */
  filled(key: string, value: unknown, state: HotState): void {
    const entry = this.#keys.get(key);
    if (entry === undefined || entry.state !== state) return;
    if (!state.local) {
      this.#settle(key, entry, true);
      return;
    }
    const bytes = estimateBytes(value);
    this.#bytes += bytes - entry.bytes;
    entry.bytes = bytes;
    if (this.#bytes > this.#o.options.maxBytes) this.#drop(key, entry);
  }

  /**
   * The client's tick: entries their hub promoted are confirmed; entries gone from the hot set
   * (evicted, dropped by a snapshot) are dropped. Expired ones come through `expired`.
   */
  tick(): void {
    for (const [key, entry] of this.#keys) {
      const now = this.#o.hot.get(key);
      if (now === entry.state && entry.state.local) continue;
      this.#settle(key, entry, now !== undefined && !now.local);
    }
  }

  /** The hot set dropped `state` because its time was up: a local entry its hub never confirmed. */
  expired(state: HotState): void {
    const entry = this.#keys.get(state.key);
    if (entry === undefined || entry.state !== state) return;
    this.#settle(state.key, entry, false);
    if (this.#o.options.retryMs > 0) {
      if (this.#declined.size >= MAX_DECLINED) this.#declined.delete(this.#declined.keys().next().value!);
      this.#declined.set(state.key, state.until + this.#o.options.retryMs);
    }
  }

  /**
   * The entry ended here (or its hub promoted it: broadcast from then on): its registration, if
   * any, is released. Best effort; holding too much only costs the hub Drops.
   */
  #release(state: HotState): void {
    const on = state.heldOn;
    if (on === undefined || this.#o.holds === undefined) return;
    state.heldOn = undefined;
    const link = this.#o.links().get(state.hub);
    if (link !== undefined && link.lease === on) this.#o.holds.release(link, state.key);
  }

  clear(): void {
    this.#keys.clear();
    this.#endJob();
    this.#slotKey = [];
    this.#declined.clear();
    this.#bytes = 0;
  }

  /** Drops a local entry from the hot set and everything held for it. */
  #drop(key: string, entry: { state: HotState; bytes: number }): void {
    this.#settle(key, entry, false);
    if (this.#o.hot.get(key) === entry.state) this.#o.hot.demote(key);
    this.#o.forget(key);
  }

  #settle(key: string, entry: { state: HotState; bytes: number }, confirmed: boolean): void {
    this.#keys.delete(key);
    this.#release(entry.state);
    this.#bytes -= entry.bytes;
    if (confirmed) this.confirmed++;
    else this.dropped++;
  }
}

/**
 * A rough size of a cached value in bytes (UTF-16 strings, 8 per number, field names counted):
 * enough to bound what local entries hold, not an exact heap figure. Walks plain objects and
 * arrays, at most SIZE_DEPTH levels and SIZE_FIELDS fields; anything else counts 64 bytes.
 */
export function estimateBytes(value: unknown): number {
  let fields = 0;
  const walk = (v: unknown, depth: number): number => {
    if (typeof v === 'string') return 16 + 2 * v.length;
    if (v instanceof Uint8Array) return 16 + v.byteLength;
    if (typeof v !== 'object' || v === null) return 8;
    // shared objects a value points at (an adapter's session, a class instance) are not its bytes
    const proto = Object.getPrototypeOf(v);
    if (depth >= SIZE_DEPTH || (proto !== Object.prototype && proto !== null && !Array.isArray(v))) return 64;
    let n = 16;
    for (const k in v) {
      if (++fields > SIZE_FIELDS) return n + 64;
      n += 16 + 2 * k.length + walk((v as Record<string, unknown>)[k], depth + 1);
    }
    return n;
  };
  return walk(value, 0);
}
