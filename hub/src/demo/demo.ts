/**
 * `hotkey-hub --demo`: simulated service instances, in this process, that send the hub realistic
 * traffic through the real SDK so the dashboard has something to show. Each instance reads keys
 * drawn from a Zipf(1.1) law over a catalogue (a few head keys stay hot all the time), flash-sale
 * keys surge and cool down on a schedule (promotion, then demotion), and now and then a write
 * invalidates a hot key. Everything is bounded and stops when the hub closes.
 */
import { HotKeyClient } from '@hotkey/sdk';
import type { Hub } from '../server/hub.ts';
import { ZipfSampler } from './zipf.ts';

export interface DemoOptions {
  /** simulated service instances per app @default 6 */
  instances?: number;
  /** background reads per second per instance @default 2500 */
  readsPerSecond?: number;
  /** distinct catalogue keys @default 20000 */
  catalogue?: number;
  /** a new flash key starts every this many ms @default 12000 */
  flashEveryMs?: number;
  /** a flash key surges for this long, then its traffic stops @default 20000 */
  flashForMs?: number;
}

const TICK_MS = 50;
const APPS = ['shop', 'feed'] as const;

interface Flash {
  key: string;
  until: number;
  /** cluster-wide reads per second while it lasts */
  rate: number;
}

export async function startDemo(hub: Hub, options: DemoOptions = {}): Promise<() => Promise<void>> {
  const instances = options.instances ?? 6;
  const readsPerSecond = options.readsPerSecond ?? 2500;
  const catalogue = options.catalogue ?? 20_000;
  const flashEveryMs = options.flashEveryMs ?? 12_000;
  const flashForMs = options.flashForMs ?? 20_000;

  const clients: { app: string; hk: HotKeyClient; zipf: ZipfSampler }[] = [];
  for (const app of APPS) {
    for (let i = 0; i < instances; i++) {
      const hk = new HotKeyClient({
        app,
        hubs: [hub.url],
        instanceId: `demo-${app}-${i + 1}`,
        host: `demo-host-${(i % 3) + 1}`,
      });
      clients.push({ app, hk, zipf: new ZipfSampler({ n: catalogue, s: 1.1, seed: 7 + i }) });
    }
  }
  await Promise.all(clients.map((c) => c.hk.ready()));
  // Keys the first instance of each app saw promoted and not demoted: the writes pick from these.
  const hotByApp = new Map<string, Set<string>>();
  for (const app of APPS) {
    const hot = new Set<string>();
    const first = clients.find((c) => c.app === app)!.hk;
    first.on('promote', (key) => hot.add(key));
    first.on('demote', (key) => hot.delete(key));
    hotByApp.set(app, hot);
  }

  const flashes: Flash[] = [];
  let flashNo = 0;
  const value = (key: string) => Promise.resolve(`value of ${key}`);
  const perTick = Math.max(1, Math.round((readsPerSecond * TICK_MS) / 1000));

  const traffic = setInterval(() => {
    const now = Date.now();
    while (flashes.length && flashes[0]!.until <= now) flashes.shift();
    for (const { app, hk, zipf } of clients) {
      const prefix = app === 'shop' ? 'item:' : 'post:';
      for (let n = 0; n < perTick; n++) void hk.get(prefix + zipf.next(), value).catch(() => {});
      for (const flash of flashes) {
        if (!flash.key.startsWith(prefix)) continue;
        const reads = Math.round((flash.rate * TICK_MS) / 1000 / instances);
        for (let n = 0; n < reads; n++) void hk.get(flash.key, value).catch(() => {});
      }
    }
  }, TICK_MS);

  const surge = () => {
    flashNo++;
    const app = APPS[flashNo % APPS.length]!;
    const key = `${app === 'shop' ? 'item' : 'post'}:flash-sale-${flashNo}`;
    flashes.push({ key, until: Date.now() + flashForMs, rate: 1500 + (flashNo % 4) * 1000 });
  };
  surge();
  const flashTimer = setInterval(surge, flashEveryMs);

  // A write now and then: invalidates a hot key at every instance.
  const writes = setInterval(() => {
    const writer = clients[Math.floor(Math.random() * clients.length)]!;
    const hot = [...hotByApp.get(writer.app)!];
    const key = hot[Math.floor(Math.random() * hot.length)];
    if (key !== undefined) void writer.hk.invalidate(key).catch(() => {});
  }, 3000);

  const stop = async () => {
    clearInterval(traffic);
    clearInterval(flashTimer);
    clearInterval(writes);
    await Promise.all(clients.map((c) => c.hk.close()));
  };
  hub.httpServer.once('close', () => void stop());
  return stop;
}
