/**
 * A session's opening: the Hello's protocol version range is matched against the hub's, the app
 * admits it (apps.ts: name, token, capacity), and the session is told where it stands — a Welcome
 * (the hub, the membership, the app's rules and thresholds, the broadcast sequence it starts at)
 * followed by a Snapshot of the app's hot keys. A Resync is answered with the same Snapshot.
 */
import { ErrorCode, ProtocolError } from '@hotkey/sdk';
import {
  CloseCode,
  describeRange,
  HOLDERS_VERSION,
  negotiateVersion,
  offeredRange,
  OLDEST_CLIENT_VERSION,
  PROTOCOL_VERSION,
  type Hello,
} from '@hotkey/sdk/protocol';
import { rulesForPeers } from '@hotkey/sdk/rules';
import type { Apps, AppState } from '../apps.ts';
import { snapshotFrame, welcomeFrame } from '../broadcast/frames.ts';
import { admitVersion } from '../membership/legacy-sessions.ts';
import type { MemberView } from '../membership/members.ts';
import { reporterBit } from '../aggregate/reporter-count.ts';
import { type Session, SessionState } from './session.ts';
import { TokenBucket } from '../token-bucket.ts';
import type { HubTunables } from '../tunables.ts';

/** What of the hub an opening reads. */
export interface HelloContext {
  hubId: string;
  apps: Apps;
  members: MemberView;
  tunables: HubTunables;
  /** wall clock in ms */
  wallNow: () => number;
}

/** The version both sides speak; a ProtocolError (4001) when the ranges do not meet. */
export function sessionVersion(hello: Hello): number {
  const version = negotiateVersion(hello, OLDEST_CLIENT_VERSION, PROTOCOL_VERSION);
  if (version !== undefined) return version;
  const [lo, hi] = offeredRange(hello);
  throw new ProtocolError(
    ErrorCode.Version,
    `protocol ${describeRange(lo, hi)} is not supported; this hub speaks ${describeRange(OLDEST_CLIENT_VERSION, PROTOCOL_VERSION)}`,
    CloseCode.Version,
  );
}

/** Admits `session` into its app and sends it Welcome and Snapshot; throws a ProtocolError on refusal. */
export function openSession(ctx: HelloContext, session: Session, hello: Hello): AppState {
  const version = sessionVersion(hello);
  if (hello.role === 'dashboard') {
    // pages get the live feed on LIVE_PATH (http/dashboard-feed.ts), not on the SDK endpoint
    throw new ProtocolError(ErrorCode.Protocol, 'dashboard feed not available', CloseCode.Protocol);
  }
  const { apps, tunables } = ctx;
  const app = apps.admit(hello);
  session.state = SessionState.Open;
  session.app = hello.app;
  session.instance = hello.instance;
  session.host = hello.host ?? '';
  session.sdk = hello.sdk;
  session.reporter = reporterBit(hello.instance);
  session.appliedSeq = app.broadcaster.seq;
  admitVersion(session, version);
  session.soloBudget = new TokenBucket(tunables.soloPromotionRate, tunables.soloPromotionBurst, ctx.wallNow());
  session.fairShare = app.aggregator.openShare(session.remote);
  apps.join(app, session);
  app.broadcaster.sendTo(
    session.peer,
    welcomeFrame(
      {
        hub: ctx.hubId,
        epoch: ctx.members.epoch,
        members: ctx.members.members,
        rules: rulesForPeers(app.aggregator.rules),
        local: apps.localThresholds(app),
        instances: app.sessionsByInstance.size,
        seq: app.broadcaster.seq,
        ...(version >= HOLDERS_VERSION ? { w: app.holders.w } : {}),
      },
      version,
    ),
  );
  sendSnapshot(app, session, ctx.wallNow(), ctx.members.accept);
  return app;
}

/**
 * The app's hot keys, with their replica counts, at the broadcast sequence they hold at. Only
 * those this hub owns (`accept`; undefined: every key): keys still counted here while their
 * windows go to a new owner are not vouched for (ownership-fence.ts).
 */
export function sendSnapshot(
  app: AppState,
  session: Session,
  now: number,
  accept: ((key: string) => boolean) | undefined,
): void {
  const all = app.aggregator.hot(now);
  // a held promotion (announce.ts) is not vouched for yet either
  const hot = all.filter((v) => (accept === undefined || accept(v.key)) && !app.heldPromotions.has(v.key));
  app.broadcaster.sendTo(
    session.peer,
    snapshotFrame(hot, (key) => app.replicas.count(key), app.broadcaster.seq),
  );
}
