/**
 * What replica keys (redis/read/replicas.ts) need of an ioredis client: a Cluster's slot map
 * (`slots[slot][0]` is the master's `host:port`), its masters, and the adapter's own sender past
 * the hook (own-connection.ts), which ioredis routes to the node of the command's first key.
 */
import type { Cluster } from 'ioredis';
import type { ReplicaNodes } from '../redis/read/replicas.ts';
import type { Client } from './command.ts';
import { dbOf } from './deployment.ts';

export function ioredisReplicaNodes(
  client: Client,
  send: (name: string, args: unknown[], replyEncoding: string | null) => Promise<unknown>,
): ReplicaNodes {
  const isCluster = (client as Partial<Cluster>).isCluster === true;
  return {
    isCluster,
    masterOf: (slot) => (isCluster ? (client as Cluster).slots[slot]?.[0] : undefined),
    masterCount: () => (isCluster ? (client as Cluster).nodes('master').length : 1),
    send,
    db: () => (isCluster ? undefined : dbOf(client)),
  };
}
