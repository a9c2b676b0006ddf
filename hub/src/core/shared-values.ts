/**
 * Value push for shared keys (rules with `share: true`), per app: the owner hub asks one SDK
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
 * Timing: a Fill not answered within `fillTimeoutMs` goes once to another session; the next Fill
 * for a refresh is due `refreshAheadRatio × cacheTtlMs` (less a tick) after the last accepted push, while the key
 * stays hot (SDKs refresh by themselves only later, as a fallback: client/push.ts).
 */
import { encode, MsgType, type Push } from '@hotkey/sdk/protocol';
import { LOAD_DEFAULTS, type Rule } from '@hotkey/sdk/rules';
import type { Broadcaster } from './broadcaster.ts';
import type { HubMetrics } from './hub-metrics.ts';
import type { Session } from './session.ts';

interface Shared {
  ver: number;
  cacheTtlMs: number;
  refreshAheadRatio: number;
  /** the session asked by the outstanding Fill, and when; undefined: none outstanding */
  filler: Session | undefined;
  fillAt: number;
  /** Fills sent in this round (the promotion, or one refresh period): at most 2 */
  round: number;
  /** when the next refresh Fill is due (Infinity: after the first push) */
  refreshAt: number;
}

/** Fills per round: the first asked, and one other if it does not answer in time. */
const FILLS_PER_ROUND = 2;

export interface SharedValuesOptions {
  broadcaster: Broadcaster;
  /** the app's SDK sessions now: one of them is asked to load */
  sessions: () => Iterable<Session>;
  metrics: HubMetrics;
  fillTimeoutMs: number;
  /** the hub's tick: a refresh is scheduled a tick early, so the tick that sends it is never late */
  tickMs: number;
  /** picks an index in [0, n): a random one by default */
  pick?: (n: number) => number;
}

export class SharedValues {
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
    if (rule.share !== true || !rule.cache || rule.cacheTtlMs <= 0) return;
    const state: Shared = {
      ver: ++this.#ver,
      cacheTtlMs: rule.cacheTtlMs,
      refreshAheadRatio: rule.refreshAheadRatio ?? LOAD_DEFAULTS.refreshAheadRatio,
      filler: undefined,
      fillAt: 0,
      round: 0,
      refreshAt: Infinity,
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
      for (const state of this.#keys.values()) state.ver = ++this.#ver;
      return;
    }
    const state = this.#keys.get(key);
    if (state !== undefined) state.ver = ++this.#ver;
  }

  /** A session answered a Fill. Accepted only from the session asked, under the version it was asked with. */
  push(session: Session, push: Push, now: number): void {
    const state = this.#keys.get(push.key);
    if (state === undefined || state.filler !== session || push.ver !== state.ver) {
      this.#o.metrics.pushesDiscarded++;
      return;
    }
    state.ver = ++this.#ver;
    state.filler = undefined;
    state.round = 0;
    state.refreshAt = now + state.cacheTtlMs * state.refreshAheadRatio - this.#o.tickMs;
    this.#o.metrics.pushesAccepted++;
    this.#o.broadcaster.sendAll({ t: MsgType.Value, key: push.key, ver: state.ver, value: push.value });
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
    const sessions = [...this.#o.sessions()];
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
