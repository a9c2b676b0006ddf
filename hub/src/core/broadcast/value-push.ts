/**
 * Value push for shared keys (rules with `push: true`), per app: the owner hub asks one SDK
 * session to load a key (Fill), accepts its value (Push) and broadcasts it to every SDK of the app
 * (Value), so one loader call serves the cluster at promotion and at each refresh.
 *
 * Versions: each shared key has `ver`, moved to the app's next version by every invalidation of
 * the key (or a flush of the app) and by every accepted push. A Fill carries the `ver` it was sent under; its Push is accepted
 * only from the session asked and only while `ver` is unchanged — so a value whose load began
 * before an invalidation reached this hub is discarded (the SDK got the Invalidate before the
 * Fill on the same socket, so a Fill sent after it yields a value read after the write), and of two
 * pushes for one Fill round only the first counts. The broadcast Value carries the new `ver`:
 * higher than any Value before it, so SDKs ignore anything older. Values are opaque bytes here,
 * forwarded, never kept. State exists only for hot shared keys (bounded by the app's hot set).
 *
 * Vouching: the session whose value the SDKs hold now (the one that pushed it, or the writer of
 * an update) is the key's `supplier`. Only it hears Redis writes of the key that bypass the SDK
 * (its tracking of the key), and it answers them with an invalidation; when it leaves, nobody
 * would, so the hub invalidates every key it supplied (`orphaned`). An invalidation or a newer
 * value ends a supplier's role.
 *
 * Updates: a write that carries its new value (InvalidateRequest `value`) takes the next version
 * like a push and rides the invalidation's broadcast (`updated`), so every SDK drops the old
 * value and injects the new one in one step, in order with every Value and Invalidate.
 *
 * Timing: a Fill not answered within `fillTimeoutMs` goes once to another session; the next Fill
 * for a refresh is due `refreshAheadRatio × cacheTtlMs` (less a tick) after the last accepted push, while the key
 * stays hot (SDKs refresh by themselves only later, as a fallback: sdk/src/client/read/push.ts).
 */
import { encode, MsgType, type Push, type Value } from '@hotkey/sdk/protocol';
import { LOAD_DEFAULTS, type Rule } from '@hotkey/sdk/rules';
import type { Broadcaster } from './broadcaster.ts';
import type { HubMetrics } from '../observe/hub-metrics.ts';
import { isLegacy } from '../membership/legacy-sessions.ts';
import type { Session } from '../ingest/session.ts';

interface Shared {
  ver: number;
  /** the session that supplied the value SDKs hold now (undefined: none pushed since the last invalidation) */
  supplier: Session | undefined;
  cacheTtlMs: number;
  refreshAheadRatio: number;
  /** the session asked by the outstanding Fill, and when; undefined: none outstanding */
  filler: Session | undefined;
  fillAt: number;
  /** Fills sent in this round (the promotion, or one refresh period): at most 2 */
  round: number;
  /** when the next refresh Fill is due (Infinity: after the first push) */
  refreshAt: number;
  /**
   * seq of the last invalidation or update of the key broadcast (at first: the seq when the hub
   * began to share it, the writes before unknown): an update marked before it is not pushed
   */
  writeSeq: number;
}

/** Fills per round: the first asked, and one other if it does not answer in time. */
const FILLS_PER_ROUND = 2;

export interface SharedValuesOptions {
  broadcaster: Broadcaster;
  /** the app's SDK sessions now: one of them is asked to load */
  sessions: () => Iterable<Session>;
  metrics: HubMetrics;
  fillTimeoutMs: number;
  /** bytes of a pushed value at most: a larger Push is discarded, a larger update is a plain invalidation */
  maxPushBytes: number;
  /** the hub's tick: a refresh is scheduled a tick early, so the tick that sends it is never late */
  tickMs: number;
  /** picks an index in [0, n): a random one by default */
  pick?: (n: number) => number;
}

export class ValuePush {
  readonly #o: SharedValuesOptions;
  readonly #keys = new Map<string, Shared>();
  readonly #pick: (n: number) => number;
  /** the last version handed out: versions grow across the app's keys, so a re-promoted key never reuses one */
  #ver = 0;

  constructor(options: SharedValuesOptions) {
    this.#o = options;
    this.#pick = options.pick ?? ((n) => Math.floor(Math.random() * n));
  }

  get size(): number {
    return this.#keys.size;
  }

  /** A key was promoted: if its rule shares values, one session is asked to load it. */
  promoted(key: string, rule: Rule, now: number): void {
    if (rule.push !== true || !rule.cache || rule.cacheTtlMs <= 0) return;
    const state: Shared = {
      ver: ++this.#ver,
      supplier: undefined,
      cacheTtlMs: rule.cacheTtlMs,
      refreshAheadRatio: rule.refreshAheadRatio ?? LOAD_DEFAULTS.refreshAheadRatio,
      filler: undefined,
      fillAt: 0,
      round: 0,
      refreshAt: Infinity,
      writeSeq: this.#o.broadcaster.seq,
    };
    this.#keys.set(key, state);
    this.#fill(key, state, now);
  }

  demoted(key: string): void {
    this.#keys.delete(key);
  }

  /** An invalidation of `key` (or, `flush`, of everything) went out: outstanding loads are void. */
  invalidated(key: string, flush: boolean): void {
    if (flush) {
      for (const state of this.#keys.values()) {
        state.ver = ++this.#ver;
        state.supplier = undefined;
      }
      return;
    }
    const state = this.#keys.get(key);
    if (state !== undefined) {
      state.ver = ++this.#ver;
      state.supplier = undefined;
    }
  }

  /**
   * A write of `key` by `session` carries its new value: if the key is a hot shared key here and no
   * other write of it was broadcast after the writer's mark `since` (InvalidateRequest), the
   * value's version (the invalidation's move of `ver` and the value in one), else undefined (a
   * plain invalidation). An outstanding Fill is void; the next refresh counts from now.
   */
  updated(key: string, session: Session, now: number, since: number): number | undefined {
    const state = this.#keys.get(key);
    if (state === undefined) return undefined;
    if (state.writeSeq > since) {
      // another write went out after the writer's mark: it may be the newer one in the store
      this.#o.metrics.updatesSuperseded++;
      return undefined;
    }
    state.ver = ++this.#ver;
    state.supplier = session;
    state.filler = undefined;
    state.round = 0;
    state.refreshAt = now + state.cacheTtlMs * state.refreshAheadRatio - this.#o.tickMs;
    return state.ver;
  }

  /** An invalidation or update of `key` (or, `flush`, of everything) was broadcast as `seq`. */
  written(key: string, flush: boolean, seq: number): void {
    if (flush) {
      for (const state of this.#keys.values()) state.writeSeq = seq;
      return;
    }
    const state = this.#keys.get(key);
    if (state !== undefined) state.writeSeq = seq;
  }

  /** Whether the value SDKs hold for `key` now is the one `session` supplied. */
  supplies(key: string, session: Session): boolean {
    return this.#keys.get(key)?.supplier === session;
  }

  /** The keys whose current value `session` supplied, now vouched for by nobody: the caller invalidates them. */
  orphaned(session: Session): string[] {
    const keys: string[] = [];
    for (const [key, state] of this.#keys) if (state.supplier === session) keys.push(key);
    return keys;
  }

  /** A session answered a Fill. Accepted only from the session asked, under the version it was asked with. */
  push(session: Session, push: Push, now: number): void {
    const state = this.#keys.get(push.key);
    if (state === undefined || state.filler !== session || push.ver !== state.ver) {
      this.#o.metrics.pushesDiscarded++;
      return;
    }
    if (push.value.byteLength > this.#o.maxPushBytes) {
      // the SDKs load by themselves, as for any value not pushed
      this.#o.metrics.pushesDiscarded++;
      this.#o.metrics.pushesOversized++;
      state.filler = undefined;
      return;
    }
    state.ver = ++this.#ver;
    state.supplier = session;
    state.filler = undefined;
    state.round = 0;
    state.refreshAt = now + state.cacheTtlMs * state.refreshAheadRatio - this.#o.tickMs;
    this.#o.metrics.pushesAccepted++;
    const value: Value = { t: MsgType.Value, key: push.key, ver: state.ver, value: push.value };
    if (push.form !== undefined) value.form = push.form;
    this.#o.broadcaster.sendCurrent(value);
  }

  /** A session left: a Fill it was asked goes to another at once (counted in its round). */
  left(session: Session, now: number): void {
    for (const [key, state] of this.#keys) if (state.filler === session) this.#fill(key, state, now);
  }

  /** Fills that timed out go to another session once; refreshes that are due go out. */
  tick(now: number): void {
    for (const [key, state] of this.#keys) {
      if (state.filler !== undefined) {
        if (now - state.fillAt >= this.#o.fillTimeoutMs) this.#fill(key, state, now);
      } else if (now >= state.refreshAt) {
        state.round = 0;
        this.#fill(key, state, now);
      }
    }
  }

  #fill(key: string, state: Shared, now: number): void {
    state.filler = undefined;
    if (state.round >= FILLS_PER_ROUND) {
      // nobody answered twice: SDKs load by themselves (their fallback); try again next period
      state.refreshAt = now + state.cacheTtlMs * state.refreshAheadRatio;
      return;
    }
    // a version-1 SDK cannot read a Fill (legacy-sessions.ts)
    const sessions = [...this.#o.sessions()].filter((s) => !isLegacy(s));
    if (sessions.length === 0) {
      state.refreshAt = now + state.cacheTtlMs * state.refreshAheadRatio;
      return;
    }
    const session = sessions[this.#pick(sessions.length)]!;
    state.round++;
    state.filler = session;
    state.fillAt = now;
    this.#o.metrics.fills++;
    this.#o.broadcaster.sendTo(session.peer, encode({ t: MsgType.Fill, key, ver: state.ver }));
  }
}
