/**
 * A change of the cluster's member list, fanned out to the parts it concerns (hub-core.ts hands
 * each one here): the window handoff of the keys that move (membership/handoff.ts), the ownership
 * fence over the acks of keys this hub no longer owns (invalidate/ownership-fence.ts), the
 * Members frame to every SDK, and the directed invalidations' holders let go of keys now
 * another hub's. It sits beside the façade, not in membership/, because it calls the steps above
 * that folder (broadcast, invalidate).
 */
import type { Member } from '@hotkey/sdk/protocol';
import { Ownership } from '@hotkey/sdk/ownership';
import type { Apps } from './apps.ts';
import { membersFrame } from './broadcast/frames.ts';
import type { Coordinator } from './coordinator.ts';
import type { InvalidationRouter } from './invalidate/invalidation-router.ts';
import type { OwnershipFence } from './invalidate/ownership-fence.ts';
import type { Logger } from './logger.ts';
import { Handoff } from './membership/handoff.ts';
import type { MemberView } from './membership/members.ts';
import type { HubMetrics } from './observe/hub-metrics.ts';
import type { HubTunables } from './tunables.ts';

/** ms between the rounds of a handoff, halved for the first: the reports still in flight to the old owner */
const HANDOFF_DRAIN_MS = 50;
/** ms an old owner still counts the keys a join moved away (SDKs report to it until their link to the joiner is up) */
const HANDOFF_FOLLOW_MS = 1000;
/** the same for a leaving hub: how much longer a SIGTERM'd hub keeps its SDKs before the 4010 close */
const HANDOFF_LEAVE_MS = 300;

export interface HubMembersOptions {
  selfId: string;
  coordinator: Coordinator;
  tunables: HubTunables;
  metrics: HubMetrics;
  logger: Logger;
  apps: Apps;
  /** the member list as this hub last heard it, and the keys it owns under it */
  members: MemberView;
  fence: OwnershipFence;
  invalidations: InvalidationRouter;
  /** wall clock in ms: the windows the aggregators count in */
  wallNow: () => number;
  /** monotonic clock in ms: how long a handoff chunk waited */
  monoNow: () => number;
}

export class HubMembers {
  /** the window handoff to and from the other hubs, starting at the membership the hub began with */
  readonly handoff: Handoff;
  readonly #o: HubMembersOptions;

  constructor(options: HubMembersOptions) {
    this.#o = options;
    const { selfId, coordinator, tunables, metrics, logger, apps, members } = options;
    this.handoff = new Handoff(
      {
        selfId,
        maxKeys: tunables.handoffMaxKeys,
        send: (to, bytes) => coordinator.sendHandoff?.(to, bytes),
        setAccept: (accept) => apps.setAccept(accept),
        drainMs: HANDOFF_DRAIN_MS,
        followMs: HANDOFF_FOLLOW_MS,
        leaveMs: HANDOFF_LEAVE_MS,
        idle: () => apps.connections === 0,
        apps: () => apps.values(),
        open: (app) => apps.open(app)?.aggregator,
        counters: metrics.handoff,
        logger,
        wallNow: options.wallNow,
        monoNow: options.monoNow,
        heard: (from, epoch) => options.fence.heard(from, epoch),
      },
      members.epoch,
      members.members,
    );
  }

  /** The member list changed to `members` at `epoch`. */
  changed(epoch: number, members: Member[]): void {
    const { apps, fence, logger, invalidations } = this.#o;
    const view = this.#o.members;
    const before = new Ownership(view.members.map((m) => m.id));
    const after = new Ownership(members.map((m) => m.id));
    const beforeAccept = view.accept;
    const lost = fence.lostHotKeys(apps.values(), beforeAccept, after, this.#o.wallNow());
    const { joined, left } = view.change(epoch, members);
    logger.info({ evt: 'members', epoch, members: members.map((m) => m.id), joined, left }, 'cluster members changed');
    // before the handoff: chunks that waited for this epoch merge there and may promote a key,
    // which must wait if this change moved it here (ownership-fence.ts promotionWaits)
    fence.changed(before, after, epoch);
    // keys owned by another hub are that hub's to decide: handed over with their windows once the
    // reports in flight are in (handoff.ts); SDKs resync on the new epoch
    this.handoff.changed(epoch, members, beforeAccept, view.accept);
    const bytes = membersFrame(epoch, members);
    for (const app of apps.values()) app.broadcaster.sendBroadcast(bytes);
    for (const [app, keys] of lost) fence.release(app, keys);
    const accept = view.accept;
    if (accept !== undefined) for (const app of apps.values()) invalidations.directed.letGo(app, accept);
  }
}
