/**
 * Protocol 3 at the owner hub: registrations (Hold, Release) and invalidations directed at a
 * key's holders (Drop) instead of broadcast to the app. Which invalidations are directed, and why
 * that audience is enough (docs/internals/holders.md §7.4):
 *
 * - a key the app's SDKs may hold by promotion — hot here, or demoted less than one lease ago
 *   (a Grant sent before the Demote may still cover it) — and every flush are broadcast;
 * - so is every key while any session of the app, connected or lingering, speaks a version before
 *   3: such an SDK serves local surges without registering;
 * - otherwise the invalidation goes to the key's registered holders (and to holders still sent a
 *   Drop of it they have not applied) but the writer, which dropped its own value before asking.
 *   A session that registers later is covered by the write clock (holders.ts); one whose lease
 *   lapsed serves nothing before a Grant sent after the Drop.
 */
import {
  CloseCode,
  encode,
  HOLDERS_VERSION,
  MAX_HOLD_KEYS,
  MsgType,
  type Hold,
  type HoldResult,
  type Release,
} from '@hotkey/sdk/protocol';
import { ErrorCode, ProtocolError } from '@hotkey/sdk';
import type { AppState } from '../apps.ts';
import type { HubMetrics } from '../observe/hub-metrics.ts';
import type { Session } from '../ingest/session.ts';

export interface DirectedOptions {
  metrics: HubMetrics;
  /** monotonic clock for leases */
  monoNow: () => number;
  leaseMs: number;
  /**
   * whether a registration of the key must be refused for now (a cluster member within its
   * ownership fence: ownership-fence.ts `holdsWait`) @default never
   */
  holdsWait?: (key: string) => boolean;
}

/** A Drop `d` or, for a closed session, its lease lapsing (Infinity), that an ack waits for. */
export type DropWaitOn = readonly [Session, number];

export class Directed {
  readonly #o: DirectedOptions;

  constructor(options: DirectedOptions) {
    this.#o = options;
  }

  /**
   * Whether an invalidation of `key` (`flush`: a namespace) may go to its holders only. Not for a
   * key this hub does not own: the writer's member list differs from this hub's, and the key's
   * holders registered with the hub their lists name, which never hears this write — the
   * broadcast reaches them here, as in version 2.
   */
  applies(app: AppState, key: string, flush: boolean): boolean {
    if (flush || app.pre3 > 0 || app.aggregator.isHot(key) || !app.holders.owns(key)) return false;
    const demoted = app.demotedAt.get(key);
    return demoted === undefined || this.#o.monoNow() - demoted >= this.#o.leaseMs;
  }

  /** A Hold: records each key, answers with one Held. */
  hold(app: AppState, session: Session, hold: Hold): void {
    refuseBefore3(session, 'Hold');
    const w = app.holders.w;
    const r = new Array<HoldResult>(hold.keys.length);
    for (let i = 0; i < hold.keys.length; i++) {
      const since = hold.since[i]!;
      if (since > w) {
        throw new ProtocolError(
          ErrorCode.Protocol,
          `Hold since[${i}] ${since} is ahead of the app's write clock ${w}`,
          CloseCode.Protocol,
        );
      }
      const key = hold.keys[i]!;
      r[i] = this.#o.holdsWait?.(key) === true ? app.holders.refuseFenced() : app.holders.hold(session, key, since);
    }
    this.#o.metrics.holds += hold.keys.length;
    app.broadcaster.sendTo(session.peer, encode({ t: MsgType.Held, id: hold.id, r, w }));
  }

  release(app: AppState, session: Session, release: Release): void {
    refuseBefore3(session, 'Release');
    for (const key of release.keys) app.holders.release(session, key);
  }

  /**
   * A directed invalidation of `key` by `writer` (undefined: the hub's own): the clock moves, each
   * open holder is sent a Drop (its registration ends), and the ack's waits are returned.
   */
  invalidate(app: AppState, writer: Session | undefined, key: string): DropWaitOn[] {
    app.holders.written(key, false);
    this.#o.metrics.invalidationsDirected++;
    const waits: DropWaitOn[] = [];
    const holders = app.holders.holdersOf(key);
    if (holders !== undefined) {
      for (const h of [...holders]) {
        if (h === writer) continue;
        if (h.closed) {
          waits.push([h, Number.POSITIVE_INFINITY]); // no frame: its lease must lapse
          continue;
        }
        waits.push([h, this.#drop(app, h, [key])]);
        app.holders.release(h, key);
      }
    }
    // sent a Drop of it earlier and not applied yet: may still serve it, so wait for that one
    const outstanding = app.drops.outstanding(key);
    if (outstanding !== undefined)
      for (const [h, d] of outstanding) if (h !== writer && !holders?.has(h)) waits.push([h, d]);
    return waits;
  }

  /**
   * This hub no longer owns the keys `owns` says no to: their registrations end, each holder is
   * sent one Drop of them, tracked like a write's (a holder that does not apply it gets no lease
   * renewal, so within grace + a lease it serves nothing this hub vouched for).
   */
  letGo(app: AppState, owns: (key: string) => boolean): void {
    const byHolder = new Map<Session, string[]>();
    for (const [key, sessions] of app.holders.releaseWhere(owns))
      for (const s of sessions) if (!s.closed) byHolder.get(s)?.push(key) ?? byHolder.set(s, [key]);
    if (byHolder.size === 0) return;
    const waits: DropWaitOn[] = [];
    for (const [h, keys] of byHolder)
      for (let i = 0; i < keys.length; i += MAX_HOLD_KEYS)
        waits.push([h, this.#drop(app, h, keys.slice(i, i + MAX_HOLD_KEYS), false)]);
    app.drops.track('', waits, this.#o.monoNow(), () => {});
  }

  /** Sends `h` its next Drop of `keys`; returns its `d`. `outstanding`: later writes of them wait for it. */
  #drop(app: AppState, h: Session, keys: string[], outstanding = true): number {
    const d = ++h.dropsSent;
    app.broadcaster.sendTo(h.peer, encode({ t: MsgType.Drop, d, keys, w: app.holders.w }));
    if (outstanding) for (const key of keys) app.drops.sent(h, key, d);
    this.#o.metrics.drops++;
    return d;
  }
}

/** A version-3 message from a session that speaks an older version: a protocol error. */
function refuseBefore3(session: Session, what: string): void {
  if (session.version >= HOLDERS_VERSION) return;
  throw new ProtocolError(
    ErrorCode.Protocol,
    `${what} is not part of protocol version ${session.version}, the version this session speaks`,
    CloseCode.Protocol,
  );
}
