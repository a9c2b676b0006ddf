/**
 * Dispatch of what a welcomed hub sends: each ServerMessage kind applied to the hot set, the
 * caches, the leases, the value push, the rate limits and the app's config, and the events that
 * follow. Broadcasts (Promote, Invalidate, Demote) carry a sequence number; a gap means one was
 * lost, so every value that hub vouched for goes and the hub resends its hot set (resync.ts).
 */
import type { HotSet } from '../cache/hot-set.ts';
import type { AccessWindow } from '../counting/window.ts';
import {
  MsgType,
  type Demote,
  type Invalidate,
  type Member,
  type Promote,
  type ServerMessage,
  type Snapshot,
} from '../wire/protocol.ts';
import type { AppConfig } from './report/app-config.ts';
import type { EmitClientEvent } from './events.ts';
import type { Holds } from './invalidate/holds.ts';
import type { Invalidator } from './invalidate/invalidator.ts';
import { applyGrant, LEASE_MARGIN_MS } from './invalidate/leases.ts';
import type { HubLink } from './links.ts';
import type { ValuePush } from './read/push.ts';
import type { RateLimits } from './report/rate-limits.ts';
import { applySnapshot, inSequence } from './invalidate/resync.ts';
import type { ClientStatus } from './observe/status.ts';

export interface DispatchOptions {
  hot: HotSet;
  window: AccessWindow;
  push: ValuePush;
  limits: RateLimits;
  invalidator: Invalidator;
  /** protocol 3 registrations (holds.ts): Held and Drop */
  holds: Holds;
  config: AppConfig;
  monoNow: () => number;
  /** the client's coarse reading of the monotonic clock, refreshed on the message's arrival */
  coarseNow: () => number;
  /** drops the key's cached value and any load of it in flight; the key stays hot */
  dropValue: (key: string) => void;
  /** drops every cached value; hot keys stay hot */
  dropAll: () => void;
  /** drops the key's cached value, load and pushed state: it is no longer hot here (or cached) */
  forget: (key: string) => void;
  /** a sequence gap: broadcasts of some hub were missed, so no recent cold read may answer a load (recent-reads.ts) */
  resynced: () => void;
  emit: EmitClientEvent;
  status: (status: ClientStatus) => void;
  /** a member list `from` a hub (the hub of the link it came on) */
  applyMembers: (epoch: number, members: Member[], from: string) => void;
}

export class Dispatch {
  readonly #o: DispatchOptions;
  /** sequence gaps that made this instance resynchronise with a hub */
  resyncs = 0;

  constructor(options: DispatchOptions) {
    this.#o = options;
  }

  /** Applies one message of `link`'s hub. */
  message(link: HubLink, message: ServerMessage): void {
    const o = this.#o;
    const hub = link.hub;
    switch (message.t) {
      case MsgType.Promote:
        this.#promote(link, message);
        return;
      case MsgType.Invalidate:
        this.#invalidate(link, message);
        return;
      case MsgType.Demote:
        this.#demote(link, message);
        return;
      case MsgType.Snapshot:
        this.#snapshot(link, message);
        return;
      case MsgType.Ack:
        o.invalidator.ack(message.id, { hub, fenced: message.fenced, ms: message.ms });
        return;
      case MsgType.Grant:
        if (message.w !== undefined && message.w > link.w) link.w = message.w;
        applyGrant(link, message, LEASE_MARGIN_MS);
        return;
      case MsgType.Held:
        o.holds.held(link, message);
        return;
      case MsgType.Drop:
        o.holds.drop(link, message);
        return;
      case MsgType.Fill:
        if (o.hot.get(message.key)?.hub === hub) o.push.fill(message);
        return;
      case MsgType.Value:
        o.push.value(link, message);
        return;
      case MsgType.Limit:
        o.limits.setSplits(message.keys, message.rates, message.ttlMs, o.monoNow());
        return;
      case MsgType.Config:
        o.config.apply(message.rules, message.local, message.instances);
        return;
      case MsgType.Members:
        o.applyMembers(message.epoch, message.members, link.hub);
        return;
      case MsgType.Welcome:
      case MsgType.Error:
        return;
    }
  }

  /** A key turned hot: its hot entry, and the cache's room for it. */
  #promote(link: HubLink, message: Promote): void {
    const o = this.#o;
    const hub = link.hub;
    this.#sequence(link, message.seq);
    const promotion = {
      ttlMs: message.hotMs,
      cacheTtlMs: message.cacheTtlMs,
      cache: message.cache,
      qps: message.qps,
      kind: message.kind ?? 'read',
      replicas: message.replicas ?? 1,
    };
    // a local surge's entry (surge-local.ts) becomes the hub's: news to the app's listeners
    const wasLocal = o.hot.get(message.key)?.local === true;
    const { state, added, evicted, reset } = o.hot.promote(hub, message.key, promotion, o.coarseNow(), link.lease);
    if (reset === true) o.forget(message.key); // cached under an older link or another hub
    if (evicted !== undefined) {
      o.forget(evicted);
      o.emit('demote', evicted, { hub, reason: 'evicted' });
    }
    if (!state.cache) o.forget(message.key);
    else if (added || reset === true) o.push.promoted(message.key, o.coarseNow());
    o.window.calm(message.key); // hot already: its reports need not hurry any more
    if (added || wasLocal) o.emit('promote', message.key, { hub, ...promotion });
  }

  /** A key's value (or every value: a flush) goes here, or is replaced by a pushed one; applied, then acknowledged. */
  #invalidate(link: HubLink, message: Invalidate): void {
    const o = this.#o;
    this.#sequence(link, message.seq);
    if (message.flush === true) o.dropAll();
    else if (message.value !== undefined) o.push.update(link, message, () => o.dropValue(message.key));
    else o.dropValue(message.key);
    link.conn.send({ t: MsgType.Applied, seq: message.seq });
    const hub = link.hub;
    o.emit(
      'invalidate',
      message.key,
      message.flush === true ? { hub, seq: message.seq, flush: true } : { hub, seq: message.seq },
    );
  }

  /** A key is no longer hot, by the word of the hub that holds it. */
  #demote(link: HubLink, message: Demote): void {
    const o = this.#o;
    this.#sequence(link, message.seq);
    // a hub that lost the key lets go of it; a newer owner's promotion here stays
    const held = o.hot.get(message.key);
    if (held !== undefined && held.hub !== link.hub) return;
    o.forget(message.key);
    if (o.hot.demote(message.key)) o.emit('demote', message.key, { hub: link.hub, reason: 'demote' });
  }

  /** The hub's whole hot set, after a gap or a reconnect (resync.ts). */
  #snapshot(link: HubLink, message: Snapshot): void {
    const o = this.#o;
    const hub = link.hub;
    const { removed, touched, promoted } = applySnapshot(o.hot, link, message, o.coarseNow());
    for (const key of touched) o.forget(key);
    for (const key of removed) {
      o.forget(key);
      o.emit('demote', key, { hub, reason: 'snapshot' });
    }
    for (const e of promoted) {
      const { qps, ttlMs, cacheTtlMs, cache } = e;
      o.emit('promote', e.key, {
        hub,
        qps,
        ttlMs,
        cacheTtlMs,
        cache,
        replicas: e.replicas ?? 1,
        kind: e.kind ?? 'read',
      });
    }
  }

  /** A broadcast's sequence number; on a gap every cached value that hub vouched for goes (resync.ts). */
  #sequence(link: HubLink, seq: number): void {
    if (inSequence(link, seq)) return;
    this.resyncs++;
    this.#o.resynced();
    for (const key of this.#o.hot.invalidateHub(link.hub)) this.#o.forget(key);
    this.#o.status({ type: 'resync', hub: link.hub, reason: 'gap' });
  }
}
