/**
 * The node-redis roles of the consistency checker (consistency-checker.test.ts): one SDK instance
 * whose node-redis client is wrapped by `withHotKeys` from `@hotkey/sdk/node-redis`, running reader
 * loops (GET of each read key, and one MGET of them all per round) and a wrapper writer, recorded
 * exactly as consistency-worker.ts records its ioredis roles (same records, same clock: hostNow), so
 * that one judge weighs both clients' reads against both clients' acknowledged writes.
 * Configured by the CK_CONFIG environment variable (JSON); `via` is 'nr-get' or 'nr-mget'.
 */
import { HotKeyClient } from '@hotkey/sdk';
import { createClient } from 'redis';
import { loadNodeRedisAdapter } from '../support/node-redis-adapter.ts';
import { hostNow } from '../support/host-clock.ts';
import { delay } from '../support/wait.ts';

interface Config {
  id: string;
  hub: string;
  redisPort: number;
  readKeys: string[];
  readers: number;
  mgetReaders?: number;
  wrapperWrites?: string[];
  writeEveryMs: number;
}

const cfg = JSON.parse(process.env.CK_CONFIG ?? '{}') as Config;
const now = hostNow;
const tick = () => new Promise<void>((r) => setImmediate(r));
const adapter = await loadNodeRedisAdapter();
if (adapter instanceof Error) throw adapter;

type Rec = (string | number | boolean)[];
let batch: Rec[] = [];
let running = true;

const hk = new HotKeyClient({
  app: 'ck',
  hubs: [cfg.hub],
  instanceId: cfg.id,
  reconnectMinMs: 50,
  reconnectMaxMs: 300,
});
hk.on('error', () => {});
const invalidateFailed = new Set<string>();
const redis = adapter.withHotKeys(
  createClient({
    socket: { host: '127.0.0.1', port: cfg.redisPort, reconnectStrategy: () => 100 },
    // a command sent while Redis is down fails at once (as the ioredis roles' maxRetriesPerRequest: 1)
    disableOfflineQueue: true,
  }),
  hk,
  { onInvalidateError: (_err, key) => invalidateFailed.add(key) },
);
redis.on('error', () => {});
await redis.connect();

const version = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));

async function readLoop(): Promise<void> {
  let n = 0;
  while (running) {
    for (const key of cfg.readKeys) {
      const start = now();
      try {
        const v = await redis.get(key);
        batch.push(['r', key, version(v), start, now(), 'nr-get']);
      } catch {
        await delay(10); // Redis down: no read to judge
      }
    }
    // yield to I/O: hot reads resolve as microtasks and would starve the sockets
    if (++n % 8 === 0) await delay(2);
    else await tick();
  }
}

async function mgetLoop(): Promise<void> {
  let n = 0;
  while (running) {
    const start = now();
    try {
      const values = await redis.mGet(cfg.readKeys);
      const end = now();
      cfg.readKeys.forEach((key, i) => batch.push(['r', key, version(values[i]), start, end, 'nr-mget']));
    } catch {
      await delay(10);
    }
    if (++n % 8 === 0) await delay(2);
    else await tick();
  }
}

async function writer(key: string): Promise<void> {
  let v = Math.floor(now()); // grows across restarts of this process
  while (running) {
    const value = ++v;
    const start = now();
    invalidateFailed.delete(key);
    let acked = false;
    try {
      await redis.set(key, String(value));
      acked = !invalidateFailed.has(key);
    } catch {
      acked = false;
    }
    batch.push(['w', key, value, start, now(), acked, 'wrapper']);
    await delay(cfg.writeEveryMs);
  }
}

const flusher = setInterval(() => {
  if (batch.length === 0 || !process.connected) return;
  process.send?.({ type: 'records', records: batch });
  batch = [];
}, 100);

process.on('message', (msg: { type: string }) => {
  if (msg.type !== 'stop') return;
  running = false;
  clearInterval(flusher);
  process.send?.({ type: 'records', records: batch }, () => {
    batch = [];
    void Promise.allSettled([hk.close(), redis.close()]).finally(() => process.exit(0));
  });
});
process.on('disconnect', () => process.exit(0));

for (let i = 0; i < cfg.readers; i++) void readLoop();
for (let i = 0; i < (cfg.mgetReaders ?? 0); i++) void mgetLoop();
for (const key of cfg.wrapperWrites ?? []) void writer(key);
process.send?.({ type: 'ready' });
