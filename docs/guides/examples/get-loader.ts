// Items owned by another service (here a catalog over HTTP; a database works the same way): any async
// loader goes through `hk.get`, which answers a hot key from this instance's memory.
import { HotKeyClient } from '@hotkey/sdk';

export interface Item {
  id: string;
  price: number;
}

export async function openItems(catalogUrl: string, hubUrl = 'ws://127.0.0.1:7070/ws') {
  const hk = new HotKeyClient({ app: 'shop', hubs: [hubUrl] });
  await hk.ready({ signal: AbortSignal.timeout(5000) });

  // called for a cold key, and once per instance when a key turns hot (concurrent callers share it)
  const load = async (key: string): Promise<Item> => {
    const res = await fetch(`${catalogUrl}/${key}`);
    if (!res.ok) throw new Error(`${key}: HTTP ${res.status}`);
    return (await res.json()) as Item;
  };

  return {
    get: (id: string) => hk.get(`item:${id}`, load),
    async set(id: string, item: Item) {
      const res = await fetch(`${catalogUrl}/item:${id}`, { method: 'PUT', body: JSON.stringify(item) });
      if (!res.ok) throw new Error(`item:${id}: HTTP ${res.status}`);
      // resolves once every instance has dropped its copy: the next read anywhere loads the new item
      await hk.invalidate(`item:${id}`);
    },
    close: () => hk.close(),
  };
}
