/**
 * What a wrapped node-redis client's own features report, read from its hook's context:
 * `hotKeyStats(client)` and `flushWrites(client)` (write-hot modes: send merged increments now),
 * `replicaStats(client)` (replica keys). A client, Cluster or pool wrapped with `withHotKeys` (or
 * a `withTypeMapping` / `withCommandOptions` proxy of one). A pool makes its state at its first
 * command: before that there is nothing to report.
 */
import type { ReplicaStats } from '../redis/read/replicas.ts';
import type { WriteHotStats } from '../redis/write/write-hot.ts';
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

/** What a wrapped client's replica keys did (redis/read/replicas.ts); undefined for a client without them. */
export function replicaStats(client: object): Readonly<ReplicaStats> | undefined {
  const real = (client as { _self?: object })._self ?? client;
  return hookOf(real)?.replicas?.stats;
}
