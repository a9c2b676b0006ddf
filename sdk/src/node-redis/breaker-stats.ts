/** `breakerStats(client)`: the per-node circuit breakers (breaker.ts) of a wrapped node-redis client, Cluster or pool. */
import type { BreakerStats } from '../redis/breaker/breaker.ts';
import { hookOf } from './client-hook.ts';

/**
 * One entry per Redis node a command was sent to, with its breaker's state; empty with
 * `breaker: false` (and for a pool that has lent no client yet). TypeError for a client not wrapped.
 */
export function breakerStats(client: object): BreakerStats[] {
  const real = (client as { _self?: object })._self ?? client;
  const ctx = hookOf(real);
  if (ctx === undefined) throw new TypeError('client is not wrapped with withHotKeys (@hotkey/sdk/node-redis)');
  return ctx.breaker?.stats() ?? [];
}
