/**
 * What replica keys (redis/replicas.ts) need of a node-redis client or Cluster: the slot map
 * (`RedisClusterSlots`: `slots[slot].master`, `masters`) and a way to send our own GET / SET /
 * DEL / PTTL to the node of a key past the hook. A standalone client sends them with its class's
 * own `sendCommand`; a Cluster through its own dispatch (`sendCommand(firstKey, …)`, which follows
 * MOVED and ASK), marked with `OWN` in the command options so that the node client's hook
 * (client-hook.ts) passes them straight through: node-redis hands the options on to the node
 * client, not the argument list.
 */
import type { ReplicaNodes } from '../redis/replicas.ts';

/** Marks a command of ours in node-redis's command options: the hook sends it as it is. */
export const OWN: unique symbol = Symbol('hotkey.node-redis.own');

type Fn = (...args: unknown[]) => unknown;
type Sender = Pick<ReplicaNodes, 'isCluster' | 'masterOf' | 'masterCount' | 'send'>;

/** node-redis takes strings and Buffers only: our numbers (PX's milliseconds) are sent as strings */
function argvOf(name: string, args: unknown[]): unknown[] {
  return [name.toUpperCase(), ...args.map((a) => (typeof a === 'number' ? String(a) : a))];
}

/** A standalone client (or a pool's first client): every copy on its one server. */
export function clientReplicaNodes(real: object, sendCommand: Fn): Sender {
  return {
    isCluster: false,
    masterOf: () => undefined,
    masterCount: () => 1,
    send: (name, args) => {
      try {
        return sendCommand.call(real, argvOf(name, args), { [OWN]: true }) as Promise<unknown>;
      } catch (err) {
        return Promise.reject(err); // a closed client refuses at once
      }
    },
  };
}

/** A node-redis Cluster as replica keys read it (v5 and v6). */
interface ClusterLike {
  readonly slots: ReadonlyArray<{ master?: { host: string; port: number } } | undefined>;
  readonly masters: ReadonlyArray<unknown>;
}

/** A Cluster: copies on other masters by its slot map, sent through its dispatch (`sendCommand` of its class). */
export function clusterReplicaNodes(real: ClusterLike, sendCommand: Fn): Sender {
  return {
    isCluster: true,
    masterOf: (slot) => {
      const master = real.slots[slot]?.master;
      return master === undefined ? undefined : `${master.host}:${master.port}`;
    },
    masterCount: () => real.masters.length,
    send: (name, args) => {
      try {
        return sendCommand.call(real, args[0], false, argvOf(name, args), { [OWN]: true }) as Promise<unknown>;
      } catch (err) {
        return Promise.reject(err);
      }
    },
  };
}

/** Whether `options` (node-redis command options) mark a command of ours. */
export function isOwn(options: object | undefined): boolean {
  return options !== undefined && (options as { [OWN]?: true })[OWN] === true;
}
