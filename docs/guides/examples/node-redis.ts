// Prices kept in Redis, read through node-redis; hotkey answers a hot key from this instance's memory.
// `@hotkey/sdk/node-redis` exports HotKeyClient too, so the ioredis adapter is never loaded.
import { HotKeyClient, withHotKeys } from '@hotkey/sdk/node-redis';
import { createClient } from 'redis';

export async function openPrices(redisUrl = 'redis://127.0.0.1:6379', hubUrl = 'ws://127.0.0.1:7070/ws') {
  const hk = new HotKeyClient({ app: 'shop', hubs: [hubUrl] });
  await hk.ready({ signal: AbortSignal.timeout(5000) });
  const redis = withHotKeys(await createClient({ url: redisUrl }).connect(), hk);

  return {
    // a hot key: from memory, no command reaches Redis; any other key: a GET
    get: (id: string) => redis.get(`price:${id}`),
    // resolves once every instance has dropped its copy: the next read anywhere sees the new price
    set: (id: string, price: string) => redis.set(`price:${id}`, price),
    async close() {
      await redis.close();
      await hk.close();
    },
  };
}
