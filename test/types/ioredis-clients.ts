/**
 * Type-check only (compiled by `pnpm typecheck`, never run): the ioredis adapter's functions take
 * the clients of every version the suite runs (test/support/client-versions.ts): ioredis at both
 * ends of its peer range, iovalkey's `Redis` and `Cluster` at both ends of its own, each handed
 * back as the caller's type; what is no such client is refused by the compiler.
 */
import { Redis } from 'ioredis-newest';
import { Redis as IoredisLowest } from 'ioredis-lowest';
import { Cluster as ValkeyCluster, Redis as Valkey } from 'iovalkey-newest';
import { Redis as ValkeyLowest } from 'iovalkey-lowest';
import type { HotKeyClient } from '@hotkey/sdk';
import { counter, flushWrites, hotKeyStats, withHotKeys } from '@hotkey/sdk/ioredis';

export async function compiles(hk: HotKeyClient): Promise<void> {
  const valkey: Valkey = withHotKeys(new Valkey(), hk, { tracking: { prefixes: ['item:'] } });
  const s: string | null = await valkey.get('k');
  const h: Record<string, string> = await valkey.hgetall('h');
  const cluster: ValkeyCluster = withHotKeys(new ValkeyCluster([]), hk);
  const lowest: ValkeyLowest = withHotKeys(new ValkeyLowest(), hk);
  const io6: Redis = withHotKeys(new Redis(), hk);
  const io5: IoredisLowest = withHotKeys(new IoredisLowest(), hk);
  hotKeyStats(valkey);
  await flushWrites(cluster);
  await counter(valkey, 'c', { shards: 4 }).add(1);
  // @ts-expect-error a string is no client
  withHotKeys('redis://localhost', hk);
  // @ts-expect-error a node-redis-like object without ioredis's status and options is no client
  withHotKeys({ sendCommand: async () => null, duplicate: () => null }, hk);
  void [s, h, cluster, lowest, io6, io5];
}
