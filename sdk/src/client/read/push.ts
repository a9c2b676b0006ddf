/**
 * Value push, SDK side (rules with `push: true`; the hub side is hub/src/core/broadcast/value-push.ts).
 * At promotion the owner hub asks one instance to load (Fill); that instance loads through its
 * limiter, caches the value as usual and Pushes it (its msgpack, packValue) under the Fill's
 * version; the hub broadcasts it as a Value and every instance injects it without calling its
 * loader. Readers of a shared key with no value wait up to `pushWaitMs` after its promotion for
 * the Value, then load by themselves. Refreshes: the hub asks one instance again at
 * refreshAheadRatio × cacheTtlMs; the others' own refresh point moves close to expiry (client.ts
 * #loadPolicy), so the pushed value normally arrives first and they only reload if it does not.
 *
 * What an instance injects: a Value from the hub that vouches for the key (the key's hot entry
 * came from that link, under its lease), with a version above the last one it took for the key
 * (lower or equal: ignored and counted, whatever the peer intended), not within PUSH_GUARD_MS
 * after it dropped the key itself (an invalidation, or a write only this instance heard through
 * Redis tracking: a value loaded elsewhere before that write must not come back), decodable, not
 * `undefined`. Its lifetime counts from its arrival (so it may outlive its load by the push's
 * transit, a few ms). An Invalidate on the same link always follows the Values it supersedes, and
 * the hub discards a Push whose load began before an invalidation (the hub's value-push.ts).
 *
 * What an instance pushes: values of these types only, which round-trip through msgpackr as
 * themselves: null, booleans, numbers (−0 arrives as 0), strings, bigints, Dates, Uint8Arrays
 * (Buffers arrive as Uint8Array-compatible Buffers), Sets, arrays and plain objects (prototype
 * Object or null) of them, `undefined` inside objects and arrays; at most `maxPushBytes` once
 * encoded. Anything else (a class instance, a Map, a function, a symbol …) is unserialisable:
 * counted, not pushed, and every instance loads by itself.
 *
 * Adapters (the ioredis wrapper) cache values of their own shape: a PushCodec turns them into a
 * pushable form (Push/Value `form`) and back, and decides what may be pushed at all — a record
 * is pushed only by an instance that can vouch for it (hears Redis writes of the key), and
 * injected only where it means the same thing (its namespace). Values of a `form` this instance
 * has no codec for, or that the codec refuses, are ignored (counted); readers then load.
 *
 * Updates (`invalidate(key, { value })`): the invalidation carries the key's new value, which
 * the hub versions like a push. An instance drops the old value and injects the new one in the
 * same step — same rules as a Value except PUSH_GUARD_MS (see update()).
 */
import type { HotSet, HotState } from '../../cache/hot-set.ts';
import type { LocalCache } from '../../cache/local-cache.ts';
import {
  MsgType,
  packValue,
  PushForm,
  unpackValue,
  type Fill,
  type Invalidate,
  type Push,
  type Value,
} from '../../wire/protocol.ts';
import type { HubLink } from '../links.ts';

/** a Value arriving this soon after the instance dropped the key itself is ignored */
export const PUSH_GUARD_MS = 1000;
/** nodes of a value walked at most to decide whether it may be pushed (deeper or larger: not pushed) */
const MAX_WALK = 100_000;

/** PushCodec.encode's answer for an adapter's value that must not be pushed (it cannot vouch for it) */
export const UNPUSHABLE: unique symbol = Symbol('hotkey.unpushable');

/** The form of an adapter's cached values on the wire (the ioredis wrapper: ioredis/shared-records.ts). */
export interface PushCodec {
  /** `value` as something packValue can hold; undefined: not the adapter's value (pushed as itself); UNPUSHABLE: not pushed */
  encode(key: string, value: unknown): { data: unknown } | typeof UNPUSHABLE | undefined;
  /** a pushed form back to the value to cache, or why it may not be cached here */
  decode(key: string, data: unknown): { value: unknown } | 'malformed' | 'foreign';
  /** this instance pushed (or wrote) `value` for `key`: it vouches for it from now on */
  pushed(key: string, value: unknown): void;
}

/** A value ready to push. */
interface Packed {
  bytes: Uint8Array;
  form: PushForm | undefined;
  /** the value packed: what pushed() vouches for */
  value: unknown;
}

interface Shared {
  /** the last version injected or pushed for the key (0: none) */
  ver: number;
  /** readers with no value wait for a push until then (0: they load) */
  waitUntil: number;
  /** readers waiting for the push */
  waiters: ((value: { value: unknown } | undefined) => void)[];
  /** the Fill this instance was asked, not yet answered */
  ticket: number | undefined;
  /** when this instance last dropped the key itself */
  droppedAt: number;
  /** the last loader a get() of the key passed (a Fill for a refresh loads with it) */
  loader: ((key: string) => unknown) | undefined;
}

export interface PushCounters {
  /** values this instance pushed after a Fill */
  pushesSent: number;
  /** values not pushed: not of a type that round-trips / over maxPushBytes */
  pushesUnserialisable: number;
  pushesOversized: number;
  /** values an adapter would not push: it cannot vouch for them (read without tracking, expiring, its vouch list full) */
  pushesUnvouched: number;
  /** Values injected without calling the loader */
  valuesInjected: number;
  /** Values ignored: version not above the last / within PUSH_GUARD_MS of a local drop / undecodable, undefined, a malformed record or a form without codec here / key not hot here under that hub */
  valuesOutdated: number;
  valuesGuarded: number;
  valuesUndecodable: number;
  valuesUnvouched: number;
  /** records of another namespace than this instance's wrapped clients use: ignored, readers load */
  valuesForeign: number;
  /** invalidations this instance sent with the new value / sent plain instead (key not hot and shared here, value not pushable or oversized) */
  updatesSent: number;
  updatesPlain: number;
  /** updates whose value was injected (the others only dropped the old value, counted as the Values above) */
  updatesInjected: number;
}

export interface PushOptions {
  hot: HotSet;
  cache: LocalCache;
  maxPushBytes: number;
  pushWaitMs: number;
  /** the key's rule shares values */
  shared: (key: string) => boolean;
  /** the key's refresh point (ms after arrival) and stale-if-error time, for an injected value */
  lifetime: (key: string, hot: HotState) => { refreshMs: number; keepMs: number };
  refreshCoarseNow: () => number;
  /** loads the key now (a Fill): joins a load in flight or starts one */
  loadNow: (key: string, loader: (key: string) => unknown, hot: HotState) => void;
}

export class ValuePush {
  readonly #o: PushOptions;
  readonly #keys = new Map<string, Shared>();
  readonly counters: PushCounters = {
    pushesSent: 0,
    pushesUnserialisable: 0,
    pushesOversized: 0,
    pushesUnvouched: 0,
    valuesInjected: 0,
    valuesOutdated: 0,
    valuesGuarded: 0,
    valuesUndecodable: 0,
    valuesUnvouched: 0,
    valuesForeign: 0,
    updatesSent: 0,
    updatesPlain: 0,
    updatesInjected: 0,
  };
  #codec: PushCodec | undefined;

  constructor(options: PushOptions) {
    this.#o = options;
  }

  /** The adapter whose values this instance caches (one per client: the ioredis wrapper's records). */
  set codec(codec: PushCodec) {
    this.#codec = codec;
  }

  /** A shared key was promoted: readers wait for its pushed value a while rather than load. */
  promoted(key: string, now: number): void {
    if (!this.#o.shared(key)) return;
    const entry = this.#entry(key);
    entry.waitUntil = now + this.#o.pushWaitMs;
  }

  /** The key is no longer hot here: its state goes (waiting readers load by themselves). */
  forget(key: string): void {
    const entry = this.#keys.get(key);
    if (entry === undefined) return;
    this.#keys.delete(key);
    for (const wake of entry.waiters.splice(0)) wake(undefined);
  }

  clear(): void {
    for (const key of [...this.#keys.keys()]) this.forget(key);
  }

  /** This instance dropped the key's value itself (invalidation, tracking, resync). */
  dropped(key: string, now: number): void {
    const entry = this.#keys.get(key);
    if (entry === undefined) return;
    entry.droppedAt = now;
    entry.ticket = undefined; // the hub voids that round anyway
  }

  /** A get() on the slow path: the loader a later Fill will load with. */
  remember(key: string, loader: (key: string) => unknown): void {
    const entry = this.#keys.get(key);
    if (entry !== undefined) entry.loader = loader;
  }

  /**
   * For a load about to start: a promise of the pushed value if readers should wait for one
   * (undefined when it does not come in time), or undefined to load now.
   */
  awaitPush(key: string): Promise<{ value: unknown } | undefined> | undefined {
    const entry = this.#keys.get(key);
    if (entry === undefined || entry.ticket !== undefined) return undefined;
    const left = entry.waitUntil - this.#o.refreshCoarseNow();
    if (left <= 0) return undefined;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        const i = entry.waiters.indexOf(wake);
        if (i >= 0) entry.waiters.splice(i, 1);
        resolve(undefined);
      }, left);
      timer.unref?.();
      const wake = (got: { value: unknown } | undefined) => {
        clearTimeout(timer);
        resolve(got);
      };
      entry.waiters.push(wake);
    });
  }

  /** The hub asks this instance to load the key and push it. */
  fill(fill: Fill): void {
    const hot = this.#o.hot.get(fill.key);
    if (hot === undefined || !this.#o.shared(fill.key)) return;
    const entry = this.#entry(fill.key);
    entry.ticket = fill.ver;
    entry.waitUntil = 0; // this instance loads: its readers must not wait for a push
    for (const wake of entry.waiters.splice(0)) wake(undefined);
    if (entry.loader !== undefined) this.#o.loadNow(fill.key, entry.loader, hot);
    // else the next get() of the key loads, and its fill pushes
  }

  /** A load of the key filled the cache: answer a Fill if one is open. */
  filled(key: string, value: unknown, link: HubLink | undefined): void {
    const entry = this.#keys.get(key);
    if (entry === undefined || entry.ticket === undefined) return;
    const ver = entry.ticket;
    entry.ticket = undefined;
    const packed = this.#pack(key, value);
    if (packed === undefined) return;
    const push: Push = { t: MsgType.Push, key, ver, value: packed.bytes };
    if (packed.form !== undefined) push.form = packed.form;
    if (link?.conn.send(push)) {
      this.counters.pushesSent++;
      if (ver > entry.ver) entry.ver = ver;
      if (packed.form !== undefined) this.#codec?.pushed(key, packed.value);
    }
  }

  /**
   * An update's value for `key` (invalidate(key, { value })): its bytes if the key is hot and
   * shared here and the value may be pushed, else undefined (a plain invalidation; counted).
   * The caller sends it, then calls `vouch`.
   */
  packUpdate(key: string, value: unknown): Packed | undefined {
    const hot = this.#o.hot.get(key);
    const packed =
      hot?.cache === true && hot.cacheTtlMs > 0 && this.#o.shared(key) ? this.#pack(key, value) : undefined;
    if (packed === undefined) this.counters.updatesPlain++;
    else this.counters.updatesSent++;
    return packed;
  }

  /** This instance sent `packed` as an update: an adapter's record is vouched for from now on. */
  vouch(key: string, packed: Packed): void {
    if (packed.form !== undefined) this.#codec?.pushed(key, packed.value);
  }

  /** `value` as bytes to push, or undefined (not pushable: counted). */
  #pack(key: string, value: unknown): Packed | undefined {
    const c = this.counters;
    const encoded = this.#codec?.encode(key, value);
    if (encoded === UNPUSHABLE) {
      c.pushesUnvouched++;
      return undefined;
    }
    const data = encoded === undefined ? value : encoded.data;
    if (!pushable(data)) {
      c.pushesUnserialisable++;
      return undefined;
    }
    let bytes: Uint8Array;
    try {
      bytes = packValue(data);
    } catch {
      c.pushesUnserialisable++;
      return undefined;
    }
    if (bytes.byteLength > this.#o.maxPushBytes) {
      c.pushesOversized++;
      return undefined;
    }
    return { bytes, form: encoded === undefined ? undefined : PushForm.Record, value };
  }

  /** A Value from `link`: injected if that hub vouches for the key and nothing newer is known. */
  value(link: HubLink, message: Value): void {
    if (this.#take(link, message.key, message.ver, message.value, message.form, true)) {
      this.counters.valuesInjected++;
    }
  }

  /**
   * An Invalidate carrying the key's new value (an update): `drop` drops the old value, then the
   * new one is injected under the same rules as a Value but PUSH_GUARD_MS. The guard keeps out a
   * value loaded before a write this instance heard; an update's value was read back after its
   * write, under the tracking of a writer that vouches for it from then on (any later write it
   * hears invalidates it cluster-wide), and this instance's own drops are mostly of that very
   * write (its tracking hears the writer's SET like any other write).
   */
  update(link: HubLink, message: Invalidate, drop: () => void): void {
    drop();
    if (message.value === undefined || message.ver === undefined) return;
    if (this.#take(link, message.key, message.ver, message.value, message.form, false)) {
      this.counters.updatesInjected++;
    }
  }

  /** Injects a pushed value if `link`'s hub vouches for the key and its version is new (and, with `guard`, PUSH_GUARD_MS allows); true if it did. */
  #take(
    link: HubLink,
    key: string,
    ver: number,
    bytes: Uint8Array,
    form: PushForm | undefined,
    guard: boolean,
  ): boolean {
    const c = this.counters;
    const hot = this.#o.hot.get(key);
    const now = this.#o.refreshCoarseNow();
    if (
      hot === undefined ||
      hot.hub !== link.hub ||
      hot.lease !== link.lease ||
      now >= hot.lease.until ||
      !hot.cache ||
      hot.cacheTtlMs <= 0 ||
      !this.#o.shared(key)
    ) {
      c.valuesUnvouched++;
      return false;
    }
    const entry = this.#entry(key);
    if (ver <= entry.ver) {
      c.valuesOutdated++;
      return false;
    }
    if (guard && now - entry.droppedAt < PUSH_GUARD_MS) {
      c.valuesGuarded++;
      return false;
    }
    const value = this.#decode(key, bytes, form);
    if (value === undefined) {
      // a newer version this instance cannot take: what it holds is superseded (its pusher no
      // longer vouches for it), and its readers load by themselves rather than wait
      entry.ver = ver;
      this.#o.cache.delete(key);
      this.#o.hot.invalidate(key);
      this.#wake(entry, undefined);
      return false;
    }
    entry.ver = ver;
    const { refreshMs, keepMs } = this.#o.lifetime(key, hot);
    this.#o.cache.set(key, value, now + refreshMs, hot, now + hot.cacheTtlMs + keepMs);
    hot.freshUntil = now + hot.cacheTtlMs;
    hot.retryAt = 0;
    this.#wake(entry, { value });
    return true;
  }

  /** A pushed value's bytes back to the value to cache, or undefined (counted). */
  #decode(key: string, bytes: Uint8Array, form: PushForm | undefined): unknown {
    const c = this.counters;
    let data: unknown;
    try {
      data = unpackValue(bytes);
    } catch {
      c.valuesUndecodable++;
      return undefined;
    }
    if (form === undefined) {
      if (data === undefined) c.valuesUndecodable++;
      return data;
    }
    const decoded = this.#codec?.decode(key, data) ?? 'malformed';
    if (decoded === 'foreign') c.valuesForeign++;
    else if (decoded === 'malformed' || decoded.value === undefined) c.valuesUndecodable++;
    else return decoded.value;
    return undefined;
  }

  #wake(entry: Shared, got: { value: unknown } | undefined): void {
    entry.waitUntil = 0;
    for (const wake of entry.waiters.splice(0)) wake(got);
  }

  #entry(key: string): Shared {
    let entry = this.#keys.get(key);
    if (entry === undefined) {
      entry = {
        ver: 0,
        waitUntil: 0,
        waiters: [],
        ticket: undefined,
        droppedAt: Number.NEGATIVE_INFINITY,
        loader: undefined,
      };
      this.#keys.set(key, entry);
    }
    return entry;
  }
}

/** Whether `value` holds only types that round-trip through the push codec as themselves. */
export function pushable(value: unknown): boolean {
  const stack: unknown[] = [value];
  let walked = 0;
  while (stack.length > 0) {
    if (++walked > MAX_WALK) return false;
    const v = stack.pop();
    if (v === null || v === undefined) continue;
    switch (typeof v) {
      case 'boolean':
      case 'number':
      case 'string':
      case 'bigint':
        continue;
      case 'object':
        break;
      default:
        return false; // function, symbol
    }
    if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
      continue;
    }
    if (v instanceof Date || v instanceof Uint8Array) continue;
    if (v instanceof Set) {
      for (const item of v) stack.push(item);
      continue;
    }
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return false;
    for (const key of Object.keys(v)) stack.push((v as Record<string, unknown>)[key]);
  }
  return true;
}
