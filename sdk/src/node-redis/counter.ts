/**
 * `counter(client, key, { shards })` on a node-redis client, Cluster or pool, wrapped with
 * `withHotKeys` or not: the core's sharded counter (redis/write/counters.ts) over the adapter's own
 * commands (own-send.ts), which a wrapped client neither counts nor invalidates.
 */
import { ShardedCounter, type CounterOptions } from '../redis/write/counters.ts';
import { ownSend } from './own-send.ts';

/**
 * A sharded counter on `client` for `key`: `add`, `take` (never below zero), `total`, `fill`,
 * `fold`. Cheap to create; holds no connection of its own. TypeError for what is not a
 * node-redis client, Cluster or pool.
 */
export function counter(client: object, key: string, options: CounterOptions): ShardedCounter {
  const c = client as { sendCommand?: unknown; _slots?: unknown };
  if (typeof client !== 'object' || client === null || typeof c.sendCommand !== 'function')
    throw new TypeError('counter: client must be a node-redis client, cluster or pool');
  // a Cluster sends by key (its sendCommand takes the routing key first); its slot map tells it apart
  const isCluster = typeof c._slots === 'object' && c._slots !== null;
  return new ShardedCounter(ownSend(client, isCluster), key, options);
}
