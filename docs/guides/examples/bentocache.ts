// bentocache with hotkey as its memory layer: an L2-only store over an ioredis connection that hotkey
// wraps. A hot key is answered from this instance's memory and a write resolves once every instance
// dropped its copy. bentocache's own L1 and bus are left out on purpose: the bus does not wait for
// other instances, so their L1 can serve the old value after a write (docs/guides/bentocache.md).
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { BentoCache, bentostore } from 'bentocache';
import { redisDriver } from 'bentocache/drivers/redis';
import { Redis } from 'ioredis';

export interface Item {
  id: string;
  price: number;
}

export async function openItems(redisUrl = 'redis://127.0.0.1:6379', hubUrl = 'ws://127.0.0.1:7070/ws') {
  const hk = new HotKeyClient({ app: 'shop', hubs: [hubUrl] });
  await hk.ready({ signal: AbortSignal.timeout(5000) });
  const redis = withHotKeys(new Redis(redisUrl), hk);
  const bento = new BentoCache({
    default: 'items',
    stores: { items: bentostore().useL2Layer(redisDriver({ connection: redis })) },
  });

  return {
    get: (id: string) => bento.get<Item>({ key: `item:${id}` }),
    set: (id: string, item: Item) => bento.set({ key: `item:${id}`, value: item, ttl: '1m' }),
    async close() {
      await bento.disconnectAll(); // closes the ioredis connection too
      await hk.close();
    },
  };
}
