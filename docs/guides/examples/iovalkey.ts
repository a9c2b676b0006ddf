// Prices kept in Valkey (or Redis), read through iovalkey, the Valkey fork of ioredis: the ioredis
// adapter takes its clients as they are.
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { Redis } from 'iovalkey';

export async function openPrices(valkeyUrl = 'redis://127.0.0.1:6379', hubUrl = 'ws://127.0.0.1:7070/ws') {
  const hk = new HotKeyClient({ app: 'shop', hubs: [hubUrl] });
  await hk.ready({ signal: AbortSignal.timeout(5000) });
  const valkey = withHotKeys(new Redis(valkeyUrl), hk);

  return {
    // a hot key: from memory, no command reaches Valkey; any other key: a GET
    get: (id: string) => valkey.get(`price:${id}`),
    // resolves once every instance has dropped its copy: the next read anywhere sees the new price
    set: (id: string, price: string) => valkey.set(`price:${id}`, price),
    async close() {
      await valkey.quit();
      await hk.close();
    },
  };
}
