/**
 * Registrations with a key's owner hub (protocol 3): a key this instance serves from its local
 * cache without the hub having promoted it (a local surge, surge-local.ts, and the kept first read
 * its load may take, recent-reads.ts) is served only once the owner recorded this session as a
 * holder, because that hub sends an invalidation of such a key to its holders only.
 *
 * The rule (docs/internals/holders.md §5.3): a value read by a request sent after this client
 * received write clock `w0` from the hub, registered with `since = w0`, may be served once the
 * Held says Recorded: the hub checked that no write of the key was processed after `w0`, and any
 * later one sends this session a Drop it applies before the write's ack. Written: the value may
 * predate a write, so it is thrown away and the key loads again (that load is sent after the
 * answer). A refusal, or the link going down first: not served locally.
 *
 * Holds are batched per turn: one Hold per owner hub per event-loop turn, with every key queued in
 * it; Releases likewise, sent before the turn's Hold. A registration ends with a Drop (the entry
 * goes, the next surge registers again), a Release (the entry ended here), or the link.
 */
import type { HotState } from '../../cache/hot-set.ts';
import { HOLDERS_VERSION, HoldResult, MsgType, type Drop, type Held } from '../../wire/protocol.ts';
import { MAX_HOLD_KEYS } from '../../limits.ts';
import type { InvalidateInfo } from '../events.ts';
import type { HubLink } from '../links.ts';

/** What a registration came to: a HoldResult, or undefined when the link went down first. */
export type HoldAnswer = HoldResult | undefined;

interface Batch {
  keys: string[];
  since: number[];
  states: HotState[];
}

interface LinkHolds {
  queued: Batch | undefined;
  released: string[];
  flushQueued: boolean;
  pending: Map<number, Batch & { resolve: ((r: HoldAnswer) => void)[] }>;
  resolvers: ((r: HoldAnswer) => void)[];
}

export interface HoldsOptions {
  /** the hot set's entry of a key now */
  hot: (key: string) => HotState | undefined;
  /** a Drop: the key's value, loads and kept reads go, and a local entry with them */
  dropped: (key: string) => void;
  /** a Drop is an invalidation of the key here: the client's 'invalidate' event */
  invalidated: (key: string, info: InvalidateInfo) => void;
}

export class Holds {
  readonly #o: HoldsOptions;
  readonly #byLink = new WeakMap<HubLink, LinkHolds>();
  #nextId = 1;
  /** keys registered / answered Written / refused or lost */
  sent = 0;
  written = 0;
  refused = 0;

  constructor(options: HoldsOptions) {
    this.#o = options;
  }

  /** Whether entries served under `link` must register first. */
  static needed(link: HubLink): boolean {
    return link.v >= HOLDERS_VERSION;
  }

  /**
   * Queues `state` (a new local entry of `link`'s hub) for this turn's Hold with `since`; sets
   * `state.hold` to its answer, which loads of the entry begun before it wait for (loads.ts).
   */
  register(link: HubLink, state: HotState, since: number): void {
    const lh = this.#of(link);
    const batch = (lh.queued ??= { keys: [], since: [], states: [] });
    batch.keys.push(state.key);
    batch.since.push(Math.min(since, link.w));
    batch.states.push(state);
    state.hold = new Promise<HoldAnswer>((resolve) => lh.resolvers.push(resolve));
    state.heldOn = link.lease;
    this.sent++;
    this.#queueFlush(link, lh);
  }

  /** `key`'s local entry ended here while registered on `link`: the hub may forget it (best effort). */
  release(link: HubLink, key: string): void {
    const lh = this.#of(link);
    lh.released.push(key);
    this.#queueFlush(link, lh);
  }

  /** A Held: each entry learns its answer. */
  held(link: HubLink, msg: Held): void {
    if (msg.w > link.w) link.w = msg.w;
    const lh = this.#byLink.get(link);
    const batch = lh?.pending.get(msg.id);
    if (lh === undefined || batch === undefined) return;
    lh.pending.delete(msg.id);
    for (let i = 0; i < batch.keys.length; i++) {
      const r = msg.r[i];
      const state = batch.states[i]!;
      const live = this.#o.hot(state.key) === state;
      if (r === HoldResult.Recorded || r === HoldResult.Written) {
        if (r === HoldResult.Written) this.written++;
        if (live) state.hold = undefined;
        // recorded for an entry that is gone meanwhile: the hub may forget it
        else this.release(link, state.key);
      } else if (live) {
        this.refused++;
        state.heldOn = undefined;
        // not served locally: a local entry goes; one the hub promoted meanwhile is broadcast
        // from then on, so loads begun after this answer need not wait
        if (state.local) this.#o.dropped(state.key);
        else state.hold = undefined;
      } else this.refused++;
      batch.resolve[i]!(r);
    }
  }

  /** A Drop: its keys go here (their registrations ended), then Applied says so. */
  drop(link: HubLink, msg: Drop): void {
    if (msg.w > link.w) link.w = msg.w;
    for (const key of msg.keys) {
      const state = this.#o.hot(key);
      if (state !== undefined && state.heldOn === link.lease) state.heldOn = undefined;
      this.#o.dropped(key);
      this.#o.invalidated(key, { hub: link.hub, seq: link.lastSeq });
    }
    if (msg.d > link.dropsApplied) link.dropsApplied = msg.d;
    link.conn.send({ t: MsgType.Applied, seq: link.lastSeq, d: link.dropsApplied });
  }

  /** The link is down: registrations not answered yet come to nothing (its entries are not served). */
  lost(link: HubLink): void {
    const lh = this.#byLink.get(link);
    if (lh === undefined) return;
    this.#byLink.delete(link);
    for (const resolve of lh.resolvers) resolve(undefined);
    for (const batch of lh.pending.values()) for (const resolve of batch.resolve) resolve(undefined);
  }

  #of(link: HubLink): LinkHolds {
    let lh = this.#byLink.get(link);
    if (lh === undefined) {
      lh = { queued: undefined, released: [], flushQueued: false, pending: new Map(), resolvers: [] };
      this.#byLink.set(link, lh);
    }
    return lh;
  }

  #queueFlush(link: HubLink, lh: LinkHolds): void {
    if (lh.flushQueued) return;
    lh.flushQueued = true;
    setImmediate(() => this.#flush(link, lh));
  }

  /** This turn's Releases, then its Hold, in frames of at most MAX_HOLD_KEYS keys. */
  #flush(link: HubLink, lh: LinkHolds): void {
    lh.flushQueued = false;
    if (this.#byLink.get(link) !== lh) return; // lost meanwhile: answered already
    for (let i = 0; i < lh.released.length; i += MAX_HOLD_KEYS)
      link.conn.send({ t: MsgType.Release, keys: lh.released.slice(i, i + MAX_HOLD_KEYS) });
    lh.released = [];
    const batch = lh.queued;
    if (batch === undefined) return;
    lh.queued = undefined;
    const resolvers = lh.resolvers;
    lh.resolvers = [];
    for (let i = 0; i < batch.keys.length; i += MAX_HOLD_KEYS) {
      const id = this.#nextId++;
      const end = i + MAX_HOLD_KEYS;
      const part = {
        keys: batch.keys.slice(i, end),
        since: batch.since.slice(i, end),
        states: batch.states.slice(i, end),
      };
      lh.pending.set(id, { ...part, resolve: resolvers.slice(i, end) });
      link.conn.send({ t: MsgType.Hold, id, keys: part.keys, since: part.since });
    }
  }
}
