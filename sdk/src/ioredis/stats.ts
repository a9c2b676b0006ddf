/**
 * What a wrapped client's own features report: `hotKeyStats(client)` for write-hot modes (and,
 * with the breaker, per-node breaker state), `flushWrites(client)` to send merged increments now.
 */
import type { IoredisLike } from './client-shape.ts';
import type { Breakers } from './breaker.ts';
import type { BreakerStats } from '../redis/breaker/breaker.ts';
import { BREAKERS, PUSHED, WRITE_HOT } from './wrapper.ts';
import type { WriteHot, WriteHotStats } from '../redis/write/write-hot.ts';
import type { SharedRecords, SharedRecordStats } from '../redis/read/shared-records.ts';
import type { UpdateWrites, UpdateWriteStats } from '../redis/write/update-writes.ts';

export interface IoredisStats {
  writeHot: WriteHotStats;
  /** one per Redis node seen, with its breaker's state; empty with `breaker: false` */
  breakers: BreakerStats[];
  /** value push of cached records (shared by every client wrapped with the same hk), and this client's update writes (zero with `writes: 'invalidate'`) */
  push: SharedRecordStats & UpdateWriteStats;
}

function writeHotOf(client: IoredisLike): WriteHot {
  const writeHot = (client as unknown as { [WRITE_HOT]?: WriteHot })[WRITE_HOT];
  if (writeHot === undefined) throw new TypeError('client is not wrapped with withHotKeys');
  return writeHot;
}

/** The adapter's counters for a client wrapped with `withHotKeys`; TypeError for another client. */
export function hotKeyStats(client: IoredisLike): IoredisStats {
  const breakers = (client as unknown as { [BREAKERS]?: Breakers })[BREAKERS];
  const writeHot = writeHotOf(client).stats();
  const pushed = (client as unknown as { [PUSHED]: { shared: SharedRecords; updates: UpdateWrites | undefined } })[
    PUSHED
  ];
  const updates = pushed.updates?.stats ?? { readBacks: 0, readBacksFailed: 0 };
  return { writeHot, breakers: breakers?.stats() ?? [], push: { ...pushed.shared.stats, ...updates } };
}

/** Sends every merged (coalesced) increment of a wrapped client now; resolves once they landed. */
export function flushWrites(client: IoredisLike): Promise<void> {
  return writeHotOf(client).flush();
}
