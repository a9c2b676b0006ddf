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
import { startRecordsOut, versionOf, writeLoop, yieldToIo } from './consistency-records-out.ts';

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
const adapter = await loadNodeRedisAdapter();
if (adapter instanceof Error) throw adapter;

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

const out = startRecordsOut({ close: () => [hk.close(), redis.close()] });

async function readLoop(): Promise<void> {
  let n = 0;
  while (out.running) {
    for (const key of cfg.readKeys) {
      const start = now();
      try {
        const v = await redis.get(key);
        out.push(['r', key, versionOf(v), start, now(), 'nr-get']);
      } catch {
        await delay(10); // Redis down: no read to judge
      }
    }
    await yieldToIo(++n);
  }
}

async function mgetLoop(): Promise<void> {
  let n = 0;
  while (out.running) {
    const start = now();
    try {
      const values = await redis.mGet(cfg.readKeys);
      const end = now();
      cfg.readKeys.forEach((key, i) => out.push(['r', key, versionOf(values[i]), start, end, 'nr-mget']));
    } catch {
      await delay(10);
    }
    await yieldToIo(++n);
  }
}

const wrapperWrite = (key: string) => async (value: string) => {
  invalidateFailed.delete(key);
  await redis.set(key, value);
  return !invalidateFailed.has(key);
};

for (let i = 0; i < cfg.readers; i++) void readLoop();
for (let i = 0; i < (cfg.mgetReaders ?? 0); i++) void mgetLoop();
for (const key of cfg.wrapperWrites ?? []) void writeLoop(out, key, 'wrapper', cfg.writeEveryMs, wrapperWrite(key));
process.send?.({ type: 'ready' });
