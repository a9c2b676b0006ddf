/**
 * Type-check only (compiled by `pnpm typecheck`, never run): the node-redis adapter's
 * `withHotKeys` takes node-redis v5 and v6 clients, clusters and pools (`redis` is v6, `redis5`
 * the test package's alias of v5) and hands back the caller's own type, its commands typed as
 * before; what is no object is refused by the compiler.
 */
import * as v6 from 'redis';
import * as v5 from 'redis5';
import type { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys, type WithHotKeysOptions } from '@hotkey/sdk/node-redis';

export async function compiles(hk: HotKeyClient, options: WithHotKeysOptions): Promise<void> {
  const c6 = withHotKeys(v6.createClient({ RESP: 3 }), hk, options);
  const c5 = withHotKeys(v5.createClient({ RESP: 2 }), hk);
  const s6: string | null = await c6.get('k');
  const s5: string | null = await c5.get('k');
  const h6: Record<string, string> = await c6.hGetAll('h');
  const h5: Record<string, string> = await c5.hGetAll('h');
  const f: Array<string | null> = [...(await c6.hmGet('h', ['a'])), ...(await c5.hmGet('h', ['a']))];
  const p6: v6.RedisClientPoolType = withHotKeys(v6.createClientPool({}), hk);
  const p5: v5.RedisClientPoolType = withHotKeys(v5.createClientPool({}), hk);
  const k6: v6.RedisClusterType = withHotKeys(v6.createCluster({ rootNodes: [] }), hk);
  const k5: v5.RedisClusterType = withHotKeys(v5.createCluster({ rootNodes: [] }), hk);
  const d5 = withHotKeys(c5.duplicate(), hk);
  await d5.hGet('h', 'f');
  // @ts-expect-error a string is no client
  withHotKeys('redis://localhost', hk);
  void [s6, s5, h6, h5, f, p6, p5, k6, k5];
}
