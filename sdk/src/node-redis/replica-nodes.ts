/**
 * What replica keys (redis/read/replicas.ts) need of a node-redis client or Cluster: the slot map
 * (`RedisClusterSlots`: `slots[slot].master`, `masters`) and a way to send our own GET / SET /
 * DEL / PTTL to the node of a key past the hook — the adapter's own commands (own-send.ts): a
 * Cluster sends them through its dispatch (`sendCommand(firstKey, …)`, which follows MOVED and
 * ASK), a client or pool as they are.
 */
import type { ReplicaNodes } from '../redis/read/replicas.ts';
import type { OwnSend } from '../redis/write/scripts.ts';

type Sender = Pick<ReplicaNodes, 'isCluster' | 'masterOf' | 'masterCount' | 'send'>;

/** Our GET / SET / DEL / PTTL as an own command; a closed client's synchronous refusal becomes a rejection. */
function sender(own: OwnSend): Sender['send'] {
  return (name, args) => {
    try {
      return own(String(args[0]), [name.toUpperCase(), ...(args as (string | number)[])]);
    } catch (err) {
      return Promise.reject(err);
    }
  };
}

/** A standalone client (or a pool's first client): every copy on its one server. */
export function clientReplicaNodes(own: OwnSend): Sender {
  return { isCluster: false, masterOf: () => undefined, masterCount: () => 1, send: sender(own) };
}

/** A node-redis Cluster as replica keys read it (v5 and v6). */
interface ClusterLike {
  readonly slots: ReadonlyArray<{ master?: { host: string; port: number } } | undefined>;
  readonly masters: ReadonlyArray<unknown>;
}

/** A Cluster: copies on other masters by its slot map, sent through its dispatch. */
export function clusterReplicaNodes(real: ClusterLike, own: OwnSend): Sender {
  return {
    isCluster: true,
    masterOf: (slot) => {
      const master = real.slots[slot]?.master;
      return master === undefined ? undefined : `${master.host}:${master.port}`;
    },
    masterCount: () => real.masters.length,
    send: sender(own),
  };
}
