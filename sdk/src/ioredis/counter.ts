/**
 * The ioredis side of the core's own commands (redis/write/scripts.ts `OwnSend`) and of its sharded
 * counters: `call` past the wrapper's hook, so a wrapped client neither counts nor invalidates
 * them (an unwrapped client just sends them); ioredis finds a Cluster's node from the keys.
 */
import type { OwnSend } from '../redis/write/scripts.ts';
import { ShardedCounter, type CounterOptions } from '../redis/write/counters.ts';
import type { Client } from './command.ts';
import type { IoredisLike } from './client-shape.ts';
import { unhooked } from './unhooked.ts';

/** The core's own commands on `client`, past the hook. */
export function ownSend(client: IoredisLike): OwnSend {
  const c = client as unknown as Client;
  return (_key, [name, ...args]) => unhooked(() => c.call(String(name), ...args));
}

/**
 * A sharded counter on `client` (a `Redis` or `Cluster` of ioredis or iovalkey, wrapped with
 * `withHotKeys` or not) for `key`: `add`, `take` (never below zero), `total`, `fill`, `fold`.
 * Cheap to create; holds no connection of its own.
 */
export function counter(client: IoredisLike, key: string, options: CounterOptions): ShardedCounter {
  return new ShardedCounter(ownSend(client), key, options);
}
