/**
 * Fencing across owner changes. An instance serves a hot key's cached value only while the hub
 * that promoted it (its owner then) vouches for it with a current lease; writes are acked by the
 * key's owner once every session connected to it applied the invalidation or was fenced
 * (invalidations.ts). When the owner changes, the two hubs' sessions need not be the same ones:
 * an instance still on its way to the new owner keeps serving under the old owner's lease while
 * the new owner acks writes it never heard of. Two rules close that:
 *
 * - **The old owner lets go.** A hub that learns it lost hot keys broadcasts their Demote, then one
 *   Invalidate it tracks like a write's: a session that has not applied it within the renewal
 *   grace (leaseMs / 8) gets no lease renewal, so within that grace plus one lease every session
 *   of the old owner has dropped the keys or can serve nothing it vouched for. Frames of one socket
 *   arrive in order, so the Invalidate's Applied proves the Demotes were applied.
 * - **The new owner waits that out.** A hub acks nothing for a key it gained before `fenceMs`
 *   after it learned the change: the grace and the lease above, plus how much later the old owner
 *   may learn of it (both hear Redis's `members-changed` at once; a hub that misses it sees the
 *   list at its next heartbeat, MEMBERSHIP_LAG_MS). A hub that (re)starts holds every key so
 *   (another hub owned them before it joined), and one asked about a key it does not own — the
 *   writer's view of the members differs from its own — holds that ack `fenceMs` from the request.
 *
 * This is the time-bounded form of Chubby's lock-delay: after a holder may have lost its lease,
 * the resource is not handed on before that lease could have run out. It assumes, like the
 * leases, one rate of time for every process and a previous owner that reaches Redis: a hub cut
 * off from Redis keeps vouching for keys it no longer owns until it hears of the change.
 *
 * The new owner's own sessions need one more rule. Until the previous owner hears of the change
 * it acks writes of the key directed to its own holders alone (directed.ts), so nothing the new
 * owner vouches for in that time — a registration (`holdsWait`) or a promotion (`promotionWaits`)
 * — may be served. Registrations wait out the fence. A promotion waits only until the previous
 * owner shows it knows: every handoff chunk names the epoch its sender had reached, and a hub
 * sends one, empty if need be, to each hub that gains keys from it (handoff.ts). A previous owner
 * heard at the change's epoch or later already broadcasts writes of the key, so a surging key's
 * handoff is promoted as fast as before; one never heard from (cut off, crashed) costs the fence.
 */
import { Ownership } from '@hotkey/sdk/ownership';
import type { AppState } from '../apps.ts';
import { demoteMessage } from '../broadcast/frames.ts';
import { MsgType } from '@hotkey/sdk/protocol';

/** how much later than this hub the previous owner may learn of a change: its heartbeat interval (500 ms by default) */
export const MEMBERSHIP_LAG_MS = 500;
/**
 * The fence of a hub granting `leaseMs` leases: how long after a start, or an owner change, its
 * acks (and registrations) of the keys concerned wait — the renewal grace and one lease, plus how
 * much later the previous owner may learn of the change.
 */
export function fenceMsOf(leaseMs: number): number {
  return leaseMs + leaseMs / 8 + MEMBERSHIP_LAG_MS;
}

/** changes remembered for their fence; more within one fence collapse into one fence of every key */
const MAX_CHANGES = 16;
/** hubs whose epoch is remembered at most (the member list's own bound) */
const MAX_HEARD = 1024;

export interface OwnershipFenceOptions {
  selfId: string;
  /** the lease granted to each session */
  leaseMs: number;
  /** monotonic clock, the one leases are measured on */
  monoNow: () => number;
  /** the member list at start */
  initial: Ownership;
  /** its membership epoch @default 0 */
  epoch?: number;
}

interface Change {
  /** the member list before it */
  before: Ownership;
  /** no ack of a key it moved here before this */
  until: number;
  /** the membership epoch it brought */
  epoch: number;
}

export class OwnershipFence {
  /** how long after an owner change the new owner holds acks of the keys it gained */
  readonly fenceMs: number;
  readonly #self: string;
  readonly #monoNow: () => number;
  /** no ack of any key before this (start, or too many changes at once) */
  #allUntil: number;
  #changes: Change[] = [];
  #current: Ownership | undefined;
  /** promotions of every key wait until this (too many changes at once) */
  #blindUntil = 0;
  /** whether a member list from the cluster naming this hub came yet */
  #listed = false;
  /** the highest epoch each other hub showed it had reached (a handoff chunk it sent) */
  readonly #heard = new Map<string, number>();
  /** hot keys let go of (Demote broadcast), for the metrics */
  released = 0;

  constructor(options: OwnershipFenceOptions) {
    this.#self = options.selfId;
    this.#monoNow = options.monoNow;
    this.fenceMs = fenceMsOf(options.leaseMs);
    this.#allUntil = this.#monoNow() + this.fenceMs;
    this.#setCurrent(options.initial);
    if (this.#current !== undefined) this.#arrived(options.initial, options.epoch ?? 0, this.#allUntil);
  }

  /**
   * This hub is listed: the keys it owns were the other members' until now. Listed alone, it
   * cannot tell whether a hub Redis dropped a moment ago (its heartbeats cut off) still acks
   * writes of them, so promotions wait out the fence, as registrations do.
   */
  #arrived(list: Ownership, epoch: number, until: number): void {
    this.#listed = true;
    const others = list.ids.filter((id) => id !== this.#self);
    if (others.length === 0) this.#blindUntil = Math.max(this.#blindUntil, until);
    else this.#changes.push({ before: new Ownership(others), until, epoch });
  }

  /**
   * The member list changed from `before` to `after` at `epoch`. The first list naming this hub
   * is its arrival (`#arrived`): `before` is then only the list it had alone while starting.
   */
  changed(before: Ownership, after: Ownership, epoch: number): void {
    const now = this.#monoNow();
    this.#setCurrent(after);
    this.#changes = this.#changes.filter((c) => c.until > now);
    if (this.#changes.length >= MAX_CHANGES) {
      this.#listed ||= after.ids.includes(this.#self);
      this.#allUntil = Math.max(this.#allUntil, now + this.fenceMs);
      this.#blindUntil = this.#allUntil;
    } else if (!this.#listed && after.ids.includes(this.#self)) this.#arrived(after, epoch, now + this.fenceMs);
    else this.#changes.push({ before, until: now + this.fenceMs, epoch });
    // what is remembered of a hub that is no member, nor a previous owner a fence waits on, is moot
    for (const id of this.#heard.keys())
      if (!after.ids.includes(id) && !this.#changes.some((c) => c.before.ids.includes(id))) this.#heard.delete(id);
  }

  /** Hub `from` had reached `epoch` when it sent a handoff chunk here (handoff.ts). */
  heard(from: string, epoch: number): void {
    if (from === this.#self || epoch <= (this.#heard.get(from) ?? Number.NEGATIVE_INFINITY)) return;
    // bounded: ids that are no member (nor a previous owner) are pruned at the next change
    if (this.#heard.size >= MAX_HEARD && !this.#heard.has(from)) return;
    this.#heard.set(from, epoch);
  }

  /** with this hub alone (or not listed: starting, leaving) every key is its own */
  #setCurrent(members: Ownership): void {
    this.#current = members.ids.length > 1 && members.ids.includes(this.#self) ? members : undefined;
  }

  /** Monotonic time before which an invalidation of `key` requested now must not be acked (past: at once). */
  notBefore(key: string): number {
    const now = this.#monoNow();
    let until = this.#allUntil;
    const current = this.#current;
    // a writer that sees another owner than this hub does: its view or ours is about to change
    if (current !== undefined && current.owner(key) !== this.#self) return Math.max(until, now + this.fenceMs);
    for (const change of this.#changes)
      if (change.until > until && change.before.owner(key) !== this.#self) until = change.until;
    return until;
  }

  /**
   * Whether a registration of `key` must wait: until the fence of a key this hub gained (of every
   * key, after its start) has passed, the hub that owned it may not have heard of the change and
   * acks writes of it directed to its own holders alone, so a holder recorded here would not hear
   * of them (docs/internals/holders.md §8.1).
   */
  holdsWait(key: string): boolean {
    const now = this.#monoNow();
    // no fence running (the usual case): no owner to compute per key
    if (this.#allUntil <= now && !this.#changes.some((c) => c.until > now)) return false;
    return this.notBefore(key) > now;
  }

  /**
   * Whether a promotion of `key` (and its entry in a Snapshot) must wait: while a fence of a
   * change that moved the key here runs and the key's previous owner has not shown it knows of
   * the change, that owner may ack writes of it without a word to the sessions the promotion
   * reaches (the module's design block). Before its first member list, or listed alone in it,
   * this hub knows of no previous owner and waits out its start fence.
   */
  promotionWaits(key: string): boolean {
    const now = this.#monoNow();
    if (this.#blindUntil > now || (!this.#listed && this.#allUntil > now)) return true;
    for (const change of this.#changes) {
      if (change.until <= now) continue;
      const previous = change.before.owner(key);
      if (previous === undefined || previous === this.#self) continue;
      if ((this.#heard.get(previous) ?? Number.NEGATIVE_INFINITY) < change.epoch) return true;
    }
    return false;
  }

  /** As `notBefore`, for a flush of a whole namespace: it covers keys of every owner change. */
  notBeforeAny(): number {
    let until = this.#allUntil;
    for (const change of this.#changes) if (change.until > until) until = change.until;
    return until;
  }

  /**
   * The hot keys of each app this hub owned under `accept` (undefined: every key) and does not own
   * in `after`; none when `after` does not list this hub.
   */
  lostHotKeys(
    apps: Iterable<AppState>,
    accept: ((key: string) => boolean) | undefined,
    after: Ownership,
    now: number,
  ): Map<AppState, string[]> {
    const out = new Map<AppState, string[]>();
    // leaving (or not listed yet): its sessions close now and their leases run out unrenewed,
    // which the new owners' fence waits out; until then its SDKs keep the keys hot
    if (!after.ids.includes(this.#self)) return out;
    const ownsAfter = (key: string) => after.ids.length === 1 || after.owner(key) === this.#self;
    for (const app of apps) {
      const lost: string[] = [];
      for (const view of app.aggregator.hot(now))
        if ((accept === undefined || accept(view.key)) && !ownsAfter(view.key)) lost.push(view.key);
      if (lost.length > 0) out.set(app, lost);
    }
    return out;
  }

  /**
   * This hub no longer owns `keys` (hot here until now): every SDK drops them, and sessions that
   * do not confirm lose their lease renewal (the module's first rule). The new owner promotes them
   * again from its own window.
   */
  release(app: AppState, keys: readonly string[]): void {
    if (keys.length === 0) return;
    for (const key of keys) {
      app.replicas.forget(key);
      app.broadcaster.broadcast(demoteMessage(key));
      app.shares.demoted(key);
    }
    this.released += keys.length;
    const seq = app.broadcaster.broadcast({ t: MsgType.Invalidate, key: keys[keys.length - 1]! });
    app.waiters ??= [...app.sessions, ...app.lingering];
    app.invalidations.track(seq, app.waiters, this.#monoNow(), () => {});
  }
}
