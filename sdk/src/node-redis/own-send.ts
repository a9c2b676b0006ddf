/**
 * The node-redis side of the core's own commands (redis/write/scripts.ts `OwnSend`): folds, shard
 * writes, merged INCRBYs and counter scripts. They carry a marker in their command options (a
 * symbol key: node-redis copies options with spread, at every hop from a Cluster's dispatch to
 * the node client it picks, so the marker reaches the hook), and the hook (client-hook.ts)
 * passes a marked command straight to the client's own `sendCommand`: not counted, not
 * invalidated, not routed again. A Cluster sends it by its key (`cluster.sendCommand(key, …)`:
 * slot lookup, MOVED and ASK as for any command); a client or pool as it is.
 */
import type { OwnSend } from '../redis/write/scripts.ts';

const OWN: unique symbol = Symbol('hotkey.own');
/** and no type mapping (a client's `commandOptions` may set one): the core reads plain replies */
const OWN_OPTIONS = Object.freeze({ [OWN]: true, typeMapping: {} });

/** Whether a command's options are the marker of one of ours. */
export function isOwn(options: object | undefined): boolean {
  return options !== undefined && (options as { [OWN]?: true })[OWN] === true;
}

type ClientSend = (argv: string[], options: object) => Promise<unknown>;
type ClusterSend = (key: string, isReadonly: boolean, argv: string[], options: object) => Promise<unknown>;

/**
 * The core's own commands on a node-redis client, pool (`sendCommand(argv, options)`) or
 * Cluster (`sendCommand(firstKey, isReadonly, argv, options)`), wrapped or not. node-redis takes
 * string arguments only: numbers are sent as their decimal text, as Redis reads them.
 */
export function ownSend(target: object, isCluster: boolean): OwnSend {
  const t = target as { sendCommand: ClientSend & ClusterSend };
  if (isCluster) return (key, argv) => t.sendCommand(key, false, argv.map(String), OWN_OPTIONS);
  return (_key, argv) => t.sendCommand(argv.map(String), OWN_OPTIONS);
}
