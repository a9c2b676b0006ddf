/**
 * Broadcast sequencing and resync. Broadcasts from a hub are numbered. A gap means we missed one
 * (maybe an invalidation): the client drops every cached value that hub vouched for, and a Resync
 * asks the hub for a fresh Snapshot of its hot set. While it is on its way, later broadcasts
 * still apply. The Snapshot replaces that hub's hot keys and ends the resync.
 */
import type { HotSet } from '../../cache/hot-set.ts';
import { MsgType, type HotEntry, type Snapshot } from '../../wire/protocol.ts';
import type { HubLink } from '../links.ts';

/**
 * Checks a broadcast's `seq` against the link. True when it follows the last one (or a resync is
 * under way already); false on a gap: a Resync was sent and the link awaits its Snapshot.
 */
export function inSequence(link: HubLink, seq: number): boolean {
  if (link.resyncing) return true;
  if (seq === link.lastSeq + 1) {
    link.lastSeq = seq;
    return true;
  }
  link.resyncing = true;
  link.conn.send({ t: MsgType.Resync });
  return false;
}

export interface SnapshotChanges {
  /** keys that were hot for that hub and are not in the snapshot */
  removed: string[];
  /** keys whose cached value can no longer be trusted */
  touched: string[];
  /** entries not hot here before the snapshot */
  promoted: HotEntry[];
}

/** Makes the snapshot the hub's whole hot set here and ends the link's resync. */
export function applySnapshot(hot: HotSet, link: HubLink, snapshot: Snapshot, now: number): SnapshotChanges {
  // a local surge's entry (surge-local.ts) was never the hub's word: not "hot before", not "removed"
  const local = new Set(hot.keysOf(link.hub).filter((k) => hot.get(k)?.local === true));
  const before = new Set(snapshot.hot.map((e) => e.key).filter((k) => hot.get(k) !== undefined && !local.has(k)));
  const { removed, touched } = hot.replaceHub(link.hub, snapshot.hot, now, link.lease);
  link.lastSeq = snapshot.seq;
  link.resyncing = false;
  return {
    removed: local.size === 0 ? removed : removed.filter((k) => !local.has(k)),
    touched,
    promoted: snapshot.hot.filter((e) => !before.has(e.key)),
  };
}
