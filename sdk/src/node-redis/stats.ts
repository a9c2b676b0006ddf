/**
 * What a wrapped node-redis client's write-hot modes report: `hotKeyStats(client)`, and
 * `flushWrites(client)` to send merged increments now. A client, Cluster or pool wrapped with
 * `withHotKeys` (or a `withTypeMapping` / `withCommandOptions` proxy of one); TypeError for
 * another. A pool makes its state at its first command: before that there is nothing to report.
 */
import type { WriteHotStats } from '../redis/write-hot.ts';
import { hookOf } from './client-hook.ts';
import type { Context } from './context.ts';

export interface NodeRedisStats {
  writeHot: WriteHotStats;
}

const NONE: WriteHotStats = Object.freeze({
  sharded: 0,
  shardedWrites: 0,
  shardedReads: 0,
  folds: 0,
  foldErrors: 0,
  coalescedIncrements: 0,
  coalescedFlushes: 0,
  coalescedFailures: 0,
});

function contextOf(client: object): Partial<Context> {
  const self = (client as { _self?: object } | null)?._self;
  const ctx = typeof self === 'object' && self !== null ? hookOf(self) : undefined;
  if (ctx === undefined) throw new TypeError('client is not wrapped with withHotKeys');
  return ctx;
}

/** The write-hot counters of a client wrapped with `withHotKeys`; TypeError for another client. */
export function hotKeyStats(client: object): NodeRedisStats {
  return { writeHot: contextOf(client).writeHot?.stats() ?? { ...NONE } };
}

/** Sends every merged (coalesced) increment of a wrapped client now; resolves once they landed. */
export function flushWrites(client: object): Promise<void> {
  return contextOf(client).writeHot?.flush() ?? Promise.resolve();
}
