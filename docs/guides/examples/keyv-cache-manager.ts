// cache-manager v7 over Keyv over @keyv/redis, whose node-redis client hotkey wraps: a hot key is
// answered from this instance's memory, and a write resolves once every instance dropped its copy.
// No in-memory Keyv store in front: hotkey is the memory layer (an in-memory store would not hear
// other instances' writes).
import { HotKeyClient, withHotKeys } from '@hotkey/sdk/node-redis';
import KeyvRedis, { createClient } from '@keyv/redis';
import { createCache } from 'cache-manager';
import { Keyv } from 'keyv';

export interface Item {
  id: string;
  price: number;
}

export async function openItems(redisUrl = 'redis://127.0.0.1:6379', hubUrl = 'ws://127.0.0.1:7070/ws') {
  const hk = new HotKeyClient({ app: 'shop', hubs: [hubUrl] });
  await hk.ready({ signal: AbortSignal.timeout(5000) });
  const redis = withHotKeys(await createClient({ url: redisUrl }).connect(), hk);
  const cache = createCache({ stores: [new Keyv({ store: new KeyvRedis(redis) })] });

  return {
    get: (id: string) => cache.get<Item>(`item:${id}`),
    set: (id: string, item: Item) => cache.set(`item:${id}`, item, 60_000),
    async close() {
      await cache.disconnect(); // closes the node-redis client too
      await hk.close();
    },
  };
}
