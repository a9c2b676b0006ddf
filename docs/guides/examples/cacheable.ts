// cacheable with hotkey as its memory layer: one store, Redis through @keyv/redis, whose node-redis
// client hotkey wraps. A hot key is answered from this instance's memory and a write resolves once
// every instance dropped its copy. cacheable's own in-memory primary is left out on purpose: it does
// not hear other instances' writes (docs/guides/cacheable.md).
import { HotKeyClient, withHotKeys } from '@hotkey/sdk/node-redis';
import KeyvRedis, { createClient } from '@keyv/redis';
import { Cacheable, Keyv } from 'cacheable';

export interface Item {
  id: string;
  price: number;
}

export async function openItems(redisUrl = 'redis://127.0.0.1:6379', hubUrl = 'ws://127.0.0.1:7070/ws') {
  const hk = new HotKeyClient({ app: 'shop', hubs: [hubUrl] });
  await hk.ready({ signal: AbortSignal.timeout(5000) });
  const redis = withHotKeys(await createClient({ url: redisUrl }).connect(), hk);
  const cache = new Cacheable({ primary: new Keyv({ store: new KeyvRedis(redis) }) });

  return {
    get: (id: string) => cache.get<Item>(`item:${id}`),
    set: (id: string, item: Item) => cache.set(`item:${id}`, item, '1m'),
    async close() {
      await cache.disconnect(); // closes the node-redis client too
      await hk.close();
    },
  };
}
