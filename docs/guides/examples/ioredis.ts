// Prices kept in Redis, read through ioredis; hotkey answers a hot key from this instance's memory.
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { Redis } from 'ioredis';

export async function openPrices(redisUrl = 'redis://127.0.0.1:6379', hubUrl = 'ws://127.0.0.1:7070/ws') {
  const hk = new HotKeyClient({ app: 'shop', hubs: [hubUrl] });
  await hk.ready({ signal: AbortSignal.timeout(5000) });
  const redis = withHotKeys(new Redis(redisUrl), hk);

  return {
    // a hot key: from memory, no command reaches Redis; any other key: a GET
    get: (id: string) => redis.get(`price:${id}`),
    // resolves once every instance has dropped its copy: the next read anywhere sees the new price
    set: (id: string, price: string) => redis.set(`price:${id}`, price),
    async close() {
      await redis.quit();
      await hk.close();
    },
  };
}
