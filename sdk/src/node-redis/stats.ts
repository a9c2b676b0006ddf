/** What a wrapped node-redis client, Cluster or pool did, read from its hook's context. */
import type { ReplicaStats } from '../redis/replicas.ts';
import { hookOf } from './client-hook.ts';

/** What a wrapped client's replica keys did (redis/replicas.ts); undefined for a client without them. */
export function replicaStats(client: object): Readonly<ReplicaStats> | undefined {
  const real = (client as { _self?: object })._self ?? client;
  return hookOf(real)?.replicas?.stats;
}
