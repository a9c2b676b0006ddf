/**
 * Leases: an instance serves the cached values a hub vouches for only while its lease from that
 * hub is current (the Chubby / memcache-at-Facebook idea, applied to invalidation). The SDK asks
 * every leaseMs / 4 (Lease{id}); the hub answers Grant{id, ms}. The SDK's lease ends at
 *
 *     (clock reading when it SENT that request) + ms − margin
 *
 * while the hub's view ends at (when it RECEIVED it) + ms, so the instance's view always ends
 * first, by at least LEASE_MARGIN_MS (an allowance for clocks that run at different rates on
 * different hosts). Every get() of a hot key checks the lease against a clock it reads itself (client.ts):
 * a reading kept from an earlier call may predate a stall of the process. A hub acks an
 * invalidation an instance did not confirm only after its view of that instance's lease lapsed,
 * so once `invalidate()` resolves nobody serves the old value, partitioned or not. A hub grants
 * nothing to a session behind the oldest invalidation it waits on (a one-way partition cannot
 * keep a lease alive). No timers here: the client's tick asks, Grants extend.
 *
 * Leases on demand: a link asks only while it is *wanted* — until `leaseWantedUntil`, which each
 * Welcome and anything that may need a value the hub vouches for (an access counted here, a value
 * cached, a load in flight, a local surge) push to one lease ahead. An instance that reads nothing
 * and holds nothing lets its leases lapse and costs its hubs no Lease or Grant: it can serve
 * nothing, and a hub passes a waiter whose lease had lapsed without waiting for it (a lease it
 * gets later comes with a Grant sent after any Invalidate before it, which it applies first).
 * docs/internals/holders.md §10.
 */
import { MsgType, type Grant } from '../../wire/protocol.ts';
import type { HubLink } from '../links.ts';

/** Lease requests kept awaiting their Grant per link; older ones are forgotten (their grant, if it comes, is ignored). */
const MAX_ASKS = 16;
/** ms shaved off every lease: the instance's view of it ends at least this much before the hub's */
export const LEASE_MARGIN_MS = 100;

let nextLeaseId = 0;

/** Keeps `link` asking for its lease until one lease from `now` (something it vouches for may be needed). */
export function wantLease(link: HubLink, now: number): void {
  const until = now + link.leaseMs;
  if (until > link.leaseWantedUntil) link.leaseWantedUntil = until;
}

/** Sends a Lease request on `link` if one is due (every leaseMs / 4 while wanted) or `force`d (a fresh link). */
export function askLease(link: HubLink, now: number, force = false): void {
  if (!force && (now >= link.leaseWantedUntil || now - link.leaseAskedAt < link.leaseMs / 4)) return;
  const id = ++nextLeaseId;
  if (!link.conn.send({ t: MsgType.Lease, id })) return;
  link.leaseAskedAt = now;
  link.leaseAsks.push({ id, sentAt: now });
  if (link.leaseAsks.length > MAX_ASKS) link.leaseAsks.shift();
}

/** A Grant arrived: the lease runs to the request's send time + ms − margin (never shortened). */
export function applyGrant(link: HubLink, grant: Grant, margin: number): void {
  const asks = link.leaseAsks;
  let i = 0;
  while (i < asks.length && asks[i]!.id !== grant.id) i++;
  if (i === asks.length) return; // not ours, or forgotten: ignore
  const { sentAt } = asks[i]!;
  asks.splice(0, i + 1); // grants come in order: earlier asks were refused
  link.leaseMs = grant.ms;
  const until = sentAt + grant.ms - margin;
  if (until > link.lease.until) link.lease.until = until;
}
