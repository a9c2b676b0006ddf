/**
 * Update writes (`withHotKeys(client, hk, { writes: 'update' })`, Redisson's SyncStrategy.UPDATE):
 * a write of a hot key whose rule shares values sends every instance the new value with its
 * invalidation, instead of having each reload it.
 *
 * Which writes: `SET`, `SETEX`, `PSETEX`, sent on their own (not in a pipeline or MULTI: their
 * keys are invalidated when EXEC replies, as always). Their options (EX/PX/EXAT/PXAT, NX/XX,
 * KEEPTTL, GET) need no mirroring: once Redis replied, the writer reads the key back through its
 * tracking connection — value, PTTL and the tracking opt-in in one transaction, like any hot
 * load — and pushes what Redis holds then. That read-back is what lets the writer vouch for the
 * value like a filler (shared-records.ts): it hears every later write of the key. It costs the
 * writer one read; every other instance reads nothing.
 *
 * Concurrent writers: the update carries a mark of where the hub's broadcasts stood before the
 * read-back (client.ts updateMark); if the hub relayed another write of the key after it, that
 * write may have reached Redis after this read-back, so the hub sends a plain invalidation
 * instead (the hub's value-push.ts) — a value never overtakes a newer write.
 *
 * Before the write is sent, the writer releases its vouch for the key (its own write would
 * otherwise come back through its tracking as an "outside" write and invalidate the update).
 * Tracking down, a failed read-back, a key not shared, a value the client may not push: a plain
 * invalidation, as with `writes: 'invalidate'`. The invalidation's ack path is the same either
 * way: the write settles once every instance applied it or was fenced.
 */
import { adapterView, type AdapterView } from '../../client/adapter-view.ts';
import type { HotKeyClient, InvalidateResult } from '../../client/client.ts';
import type { Rec, SharedRecords } from '../read/shared-records.ts';
import type { NodeTracker, Tracking } from '../tracking/tracking.ts';

const UPDATE_COMMANDS: ReadonlySet<string> = new Set(['set', 'setex', 'psetex']);

/** Whether a command (lower-case name) may push its value. */
export function isUpdateWrite(name: string): boolean {
  return UPDATE_COMMANDS.has(name);
}

export interface UpdateWriteStats {
  /** update writes whose key was read back and sent with its value */
  readBacks: number;
  /** update writes sent as plain invalidations because the read-back failed or tracking was down */
  readBacksFailed: number;
}

export class UpdateWrites {
  readonly #hk: HotKeyClient;
  readonly #view: AdapterView;
  readonly #shared: SharedRecords;
  /** the key's value, PTTL and tracking opt-in, read through tracking; undefined when tracking cannot */
  readonly #readBack: (key: string) => Promise<Rec | undefined>;
  readonly stats: UpdateWriteStats = { readBacks: 0, readBacksFailed: 0 };

  constructor(hk: HotKeyClient, shared: SharedRecords, readBack: (key: string) => Promise<Rec | undefined>) {
    this.#hk = hk;
    this.#view = adapterView(hk);
    this.#shared = shared;
    this.#readBack = readBack;
  }

  /** Whether a write of `key` by command `name` goes as an update (call before sending it). */
  claims(name: string, key: string): boolean {
    if (!isUpdateWrite(name) || !this.#view.isShared(key)) return false;
    this.#shared.release(key);
    return true;
  }

  /** After Redis replied to the write: the invalidation of `key`, carrying its read-back value when there is one. */
  invalidate(key: string): Promise<InvalidateResult> {
    // before the read-back: a write the hub relays after this mark may have landed after it
    const mark = this.#hk.updateMark(key);
    return this.#readBack(key).then(
      (rec) => {
        if (rec === undefined) this.stats.readBacksFailed++;
        else this.stats.readBacks++;
        return this.#hk.invalidate(key, rec === undefined ? undefined : { value: rec, mark });
      },
      () => {
        this.stats.readBacksFailed++;
        return this.#hk.invalidate(key);
      },
    );
  }
}

/**
 * The writer's read-back of a key through its tracking, for `UpdateWrites`: on the key's node,
 * once its connections are up (a writer that never read the key waits for them, bounded by
 * tracking.ts's TRACKING_WAIT_MS); undefined while that node's session is down.
 */
export function trackedReadBack(
  tracking: Tracking,
  load: (node: NodeTracker, key: string) => Promise<Rec>,
): (key: string) => Promise<Rec | undefined> {
  return async (key) => {
    const node = tracking.nodeFor(key);
    if (node?.starting) await node.firstLive();
    if (!node?.session.live) return undefined;
    return load(node, key);
  };
}
