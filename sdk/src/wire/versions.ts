/**
 * Protocol version negotiation. A client's Hello offers a range, `vmin`..`v` (`vmin` absent: `v`
 * alone, as a version-1 client sends it); the hub speaks the highest version both sides have:
 * min(hub's max, client's `v`), provided it is at least both sides' minimum, and says it in its
 * Welcome `v`. Otherwise the Hello is refused with HK_ERR_VERSION / close 4001. So a hub one
 * version ahead of its clients, or clients one version ahead of their hubs, still agree on the
 * older version, and a fleet can upgrade either side first.
 */

/**
 * The oldest version a hub of this code accepts: version 1, which lacks leases (Lease/Grant) and
 * the message types added with version 2 (Fill, Value, Limit); the hub handles such a session
 * apart (see PROTOCOL.md, "Versioning").
 */
export const OLDEST_CLIENT_VERSION = 1;
/**
 * The oldest version this SDK speaks: it serves cached values only under a lease, so not 1. With
 * a version-2 hub it registers nothing: that hub broadcasts every invalidation to every session.
 */
export const OLDEST_HUB_VERSION = 2;

/** The first version with holders (Hold, Held, Release, Drop): invalidations reach their audience only. */
export const HOLDERS_VERSION = 3;

/** The range a Hello offers, lowest first. */
export function offeredRange(hello: { v: number; vmin?: number }): [number, number] {
  return [hello.vmin ?? hello.v, hello.v];
}

/**
 * The version a session speaks when a side supporting [min, max] gets `hello`, or undefined when
 * the two ranges do not meet.
 */
export function negotiateVersion(hello: { v: number; vmin?: number }, min: number, max: number): number | undefined {
  const [lo, hi] = offeredRange(hello);
  const chosen = Math.min(max, hi);
  return chosen >= min && chosen >= lo ? chosen : undefined;
}

/** "version 2" or "versions 1 to 2", for refusals. */
export function describeRange(min: number, max: number): string {
  return min === max ? `version ${min}` : `versions ${min} to ${max}`;
}
