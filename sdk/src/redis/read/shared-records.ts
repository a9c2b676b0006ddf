/**
 * Value push for what the ioredis wrapper caches (rules with `push: true`; client/read/push.ts is the
 * generic part). The wrapper caches records — kind, value, namespace, Redis expiry, and the
 * tracking session it was read under, so that a write by a client without the SDK drops it
 * (tracking.ts). A receiver of a pushed record never read the key, so its own tracking would not
 * hear such a write: the instance that read it must speak for everyone.
 *
 * The vouching rule:
 * - Only a record read under a live tracking session is pushed (UNPUSHABLE otherwise: read
 *   without tracking, expiring, or the vouch list full). It goes out as `[kind, value, ns, ttlMs]`
 *   (ttlMs: what is left of its Redis TTL, less PUSH_TTL_MARGIN_MS for the push's transit; -1: none).
 * - The pusher (a filler, or the writer of an update) remembers the key with that session. When
 *   its tracking hears a write of the key, or the session ends (connection lost, silent, flushed),
 *   it invalidates the key cluster-wide through the hub (`hk.invalidate`), not only here. A write
 *   through the wrapper itself releases the key: that write invalidates or updates by itself.
 * - The hub, when the pushing session leaves, invalidates the keys whose current value it
 *   supplied (hub/src/core/broadcast/value-push.ts `orphaned`): nobody else would hear their writes.
 * - A receiver injects the record with session VOUCHED and an expiry from its TTL, under every
 *   rule of push.ts (versions, PUSH_GUARD_MS, leases), and only if the record's namespace is one
 *   its wrapped clients use; a record of another namespace is refused (counted), and it loads.
 *
 * Residual window: an outside write reaches receivers one hop later than the pusher (its tracking
 * message, then its invalidation through the hub): a few ms, measured in
 * test/e2e/ioredis-push.test.ts. A pusher frozen while its hub session stays open leaves its
 * receivers unvouched until that session closes (hub liveness) or their cacheTtlMs ends.
 */
import { adapterView } from '../../client/adapter-view.ts';
import type { HotKeyClient } from '../../client/client.ts';
import { UNPUSHABLE, type PushCodec } from '../../client/read/push.ts';
import type { TrackingSession } from '../tracking/tracking.ts';

/**
 * What a hot read caches: one entry per Redis key, tagged with the namespace it came from, and
 * with the key's expiry in Redis (PTTL read in the same round trip, measured from before the
 * read was sent, so the local copy always ends first; undefined: no TTL).
 */
export type Rec = (
  | { kind: 'string'; value: unknown }
  | { kind: 'hash'; value: Readonly<Record<string, unknown>> }
  | { kind: 'field'; value: unknown }
) & {
  ns: string;
  expiresAt: number | undefined;
  /** the tracking session it was read under (UNTRACKED: none could be used; VOUCHED: pushed); undefined: tracking is off */
  session: TrackingSession | undefined;
};

/** The session of a pushed record: vouched for by the instance that read it, through the hub. */
export const VOUCHED: TrackingSession = Object.freeze({ live: true }) as TrackingSession;
/** a pushed record's TTL is cut by this much, so that its transit cannot make it outlive the key in Redis */
export const PUSH_TTL_MARGIN_MS = 50;
/** keys an instance vouches for at most; past it, records are not pushed (every instance loads) */
const MAX_VOUCHES = 10_000;
/** namespaces remembered per client at most (databases a wrapped client selected) */
const MAX_NAMESPACES = 64;
const KINDS: ReadonlySet<unknown> = new Set(['string', 'hash', 'field']);

/** Records the wrapper made: only these are pushed as records (a user's own value never is). */
const records = new WeakSet<object>();

/** Marks `rec` as one of the wrapper's records; returns it. */
export function record<R extends Rec>(rec: R): R {
  records.add(rec);
  return rec;
}

export interface SharedRecordStats {
  /** cluster-wide invalidations sent because a pushed key was written outside the SDK or its tracking session ended */
  vouchInvalidations: number;
  /** keys this instance vouches for now */
  vouched: number;
}

const byClient = new WeakMap<HotKeyClient, SharedRecords>();

/** One per HotKeyClient, shared by every client wrapped with it: its PushCodec and the keys it vouches for. */
export class SharedRecords implements PushCodec {
  readonly #hk: HotKeyClient;
  /** keys this instance pushed and still vouches for, with the session the pushed record was read under */
  readonly #vouches = new Map<string, { session: TrackingSession; until: number }>();
  readonly #namespaces = new Set<string>();
  #invalidations = 0;

  static of(hk: HotKeyClient): SharedRecords {
    let shared = byClient.get(hk);
    if (shared === undefined) {
      shared = new SharedRecords(hk);
      byClient.set(hk, shared);
      adapterView(hk).usePushCodec(shared);
    }
    return shared;
  }

  private constructor(hk: HotKeyClient) {
    this.#hk = hk;
    // a key that is no longer hot here is pushed by nobody here: its receivers dropped it too
    hk.on('demote', (key) => this.#vouches.delete(key));
    hk.once('close', () => this.#vouches.clear());
  }

  get stats(): SharedRecordStats {
    return { vouchInvalidations: this.#invalidations, vouched: this.#vouches.size };
  }

  /** A namespace a wrapped client reads from: records of it may be injected here. */
  noteNamespace(ns: string): void {
    if (this.#namespaces.size < MAX_NAMESPACES) this.#namespaces.add(ns);
  }

  encode(key: string, value: unknown): { data: unknown } | typeof UNPUSHABLE | undefined {
    if (typeof value !== 'object' || value === null || !records.has(value)) return undefined;
    const rec = value as Rec;
    const session = rec.session;
    // read without tracking, or itself pushed: nobody here would hear a write of it
    if (session === undefined || session === VOUCHED || !session.live) return UNPUSHABLE;
    let ttlMs = -1;
    if (rec.expiresAt !== undefined) {
      ttlMs = Math.floor(rec.expiresAt - performance.now()) - PUSH_TTL_MARGIN_MS;
      if (ttlMs <= 0) return UNPUSHABLE;
    }
    if (!this.#vouches.has(key) && this.#vouches.size >= MAX_VOUCHES && !this.#prune()) return UNPUSHABLE;
    return { data: [rec.kind, rec.value, rec.ns, ttlMs] };
  }

  decode(_key: string, data: unknown): { value: unknown } | 'malformed' | 'foreign' {
    if (!Array.isArray(data) || data.length !== 4) return 'malformed';
    const [kind, value, ns, ttlMs] = data as unknown[];
    if (!KINDS.has(kind) || typeof ns !== 'string') return 'malformed';
    if (typeof ttlMs !== 'number' || !Number.isInteger(ttlMs) || ttlMs < -1) return 'malformed';
    if (kind === 'hash') {
      if (!isStringMap(value)) return 'malformed';
    } else if (value !== null && typeof value !== 'string') return 'malformed';
    if (!this.#namespaces.has(ns)) return 'foreign';
    const expiresAt = ttlMs < 0 ? undefined : performance.now() + ttlMs;
    const base = { ns, expiresAt, session: VOUCHED };
    return {
      value: record(
        kind === 'hash'
          ? { ...base, kind, value: Object.freeze(value as Record<string, unknown>) }
          : ({ ...base, kind, value } as Rec),
      ),
    };
  }

  pushed(key: string, value: unknown): void {
    const rec = value as Rec;
    if (rec.session === undefined) return;
    this.#vouches.set(key, { session: rec.session, until: rec.expiresAt ?? Number.POSITIVE_INFINITY });
  }

  /** A write of `key` through the wrapper: it invalidates or updates the key by itself. */
  release(key: string): void {
    this.#vouches.delete(key);
  }

  /** Tracking heard a write of `key` (its local value is dropped already): if pushed from here, everyone drops it. */
  heard(key: string): void {
    const vouch = this.#vouches.get(key);
    if (vouch === undefined) return;
    this.#vouches.delete(key);
    this.#invalidate(key);
  }

  /** A tracking session ended: what was pushed under it is vouched for by nobody. */
  ended(session: TrackingSession): void {
    for (const [key, vouch] of this.#vouches) {
      if (vouch.session !== session) continue;
      this.#vouches.delete(key);
      this.#invalidate(key);
    }
  }

  #invalidate(key: string): void {
    this.#invalidations++;
    // a failure (no hub): the hub invalidates the key when this session goes, leases bound the rest
    // `pushed`: a no-op at the hub if its value was superseded (e.g. by the update of a write
    // through a wrapper, which this instance's tracking hears like any other write)
    this.#hk.invalidate(key, { pushed: true }).catch(() => {});
  }

  /** Drops vouches for records expired in Redis; true if room was made. */
  #prune(): boolean {
    const now = performance.now();
    for (const [key, vouch] of this.#vouches) if (vouch.until <= now) this.#vouches.delete(key);
    return this.#vouches.size < MAX_VOUCHES;
  }
}

function isStringMap(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const v of Object.values(value)) if (typeof v !== 'string') return false;
  return true;
}
