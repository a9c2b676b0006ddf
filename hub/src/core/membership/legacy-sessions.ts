/**
 * Sessions of the previous protocol version (1), which a hub still admits so that a fleet can
 * upgrade its hubs first. Such an SDK has no lease (Lease/Grant came with version 2): it serves a
 * hot key's cached value for as long as it likes, so no lapse of time proves it dropped one, and
 * it cannot read the message types version 2 added (Fill, Value, Limit: its decoder would close
 * the socket on them). The hub therefore:
 *
 * - counts an open version-1 session as holding a lease without end (`leaseUntil` = Infinity): an
 *   invalidation's Ack waits for its Applied;
 * - cuts it off (Error HK_ERR_SLOW_CONSUMER, close 4008; it reconnects and starts afresh) when it
 *   lags behind an invalidation broadcast `leaseMs` ago or more, and names its instance in that
 *   Ack's `fenced`: the Ack then says "not confirmed by these", never "applied everywhere";
 * - after it closes, keeps it as a waiter for one `leaseMs` (as a version-2 lease may run that
 *   long), then names it in `fenced` too;
 * - never sends it Grant, Fill, Value or Limit; a Lease or Push from it is a protocol error (4000).
 *
 * So an Ack's `fenced` is the writer's signal that some instance did not confirm; only version-2
 * instances are then bounded by their lease.
 */
import { ErrorCode, ProtocolError } from '@hotkey/sdk';
import { CloseCode } from '@hotkey/sdk/protocol';
import type { Peer } from '../peer.ts';
import type { Session } from '../ingest/session.ts';

/** What of an app's state the cut-off reads (AppState's fields). */
interface LegacyApp {
  sessions: Set<Session>;
  broadcaster: { legacy: Set<Peer> };
  invalidations: { lagSince(appliedSeq: number): number | undefined };
}

/** The first protocol version with leases and the message types a version-1 SDK cannot read. */
export const LEASE_VERSION = 2;

export function isLegacy(session: Session): boolean {
  return session.version < LEASE_VERSION;
}

/** Hello accepted at `version`: a session without leases holds acks until it applies. */
export function admitVersion(session: Session, version: number): void {
  session.version = version;
  if (isLegacy(session)) session.leaseUntil = Number.POSITIVE_INFINITY;
}

/** The session closed at `now`: a lease without end becomes one lease from now. */
export function closeLease(session: Session, now: number, leaseMs: number): void {
  if (session.leaseUntil === Number.POSITIVE_INFINITY) session.leaseUntil = now + leaseMs;
}

/** A message a version-1 session cannot have sent: a protocol error. */
export function refuseFromLegacy(session: Session, what: string): void {
  if (!isLegacy(session)) return;
  throw new ProtocolError(
    ErrorCode.Protocol,
    `${what} is not part of protocol version ${session.version}, the version this session speaks`,
    CloseCode.Protocol,
  );
}

/** Cuts off the app's version-1 sessions lagging behind an invalidation tracked `leaseMs` ago or more. */
export function cutOffLagging(app: LegacyApp, now: number, leaseMs: number): void {
  if (app.broadcaster.legacy.size === 0) return;
  for (const session of [...app.sessions]) {
    if (!isLegacy(session)) continue;
    const since = app.invalidations.lagSince(session.appliedSeq);
    if (since === undefined || now - since < leaseMs) continue;
    // ended now: the waiting acks name it fenced at their next settle
    session.leaseUntil = now;
    session.fail(
      new ProtocolError(
        ErrorCode.SlowConsumer,
        `protocol version ${session.version} session applied no invalidation within ${leaseMs} ms: cut off (no lease bounds what it serves; upgrade the SDK)`,
        CloseCode.SlowConsumer,
      ),
    );
  }
}
