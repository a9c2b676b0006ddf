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
import { delay } from '../support/wait.ts';
import { readLoop, recordReads, startRecordsOut, writeLoop } from './consistency-records-out.ts';
import { rotatingReader, rotatingWriter, sampleCounter, type RotatingConfig } from './consistency-rotating.ts';

interface Config {
  id: string;
  hub: string;
  redisPort: number;
  readKeys: string[];
  readers: number;
  mgetReaders?: number;
  wrapperWrites?: string[];
  writeEveryMs: number;
  /** the rotating-key role (consistency-rotating.ts), as in consistency-worker.ts; its writes go through the wrapper */
  rotating?: RotatingConfig;
}

const cfg = JSON.parse(process.env.CK_CONFIG ?? '{}') as Config;
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
const redis = adapter.withHotKeys(
  createClient({
    socket: { host: '127.0.0.1', port: cfg.redisPort, reconnectStrategy: () => 100 },
    // a command sent while Redis is down fails at once (as the ioredis roles' maxRetriesPerRequest: 1)
    disableOfflineQueue: true,
  }),
  hk,
  { ...(cfg.rotating && { tracking: { prefixes: [cfg.rotating.prefix] } }) },
);
redis.on('error', () => {});
await redis.connect();

const out = startRecordsOut({ close: () => [hk.close(), redis.close()] });

// Redis down: no read to judge, and no busy loop while it is
const getRound = async () => {
  for (const key of cfg.readKeys) {
    if (!(await recordReads(out, [key], 'nr-get', async () => [await redis.get(key)]))) await delay(10);
  }
};
const mgetRound = async () => {
  if (!(await recordReads(out, cfg.readKeys, 'nr-mget', () => redis.mGet(cfg.readKeys)))) await delay(10);
};

/** A write counts as acknowledged when it resolves: all a caller without `onInvalidateError` is told. */
const wrapperWrite = (key: string) => async (value: string) => {
  await redis.set(key, value);
  return true;
};

for (let i = 0; i < cfg.readers; i++) void readLoop(out, getRound);
for (let i = 0; i < (cfg.mgetReaders ?? 0); i++) void readLoop(out, mgetRound);
for (const key of cfg.wrapperWrites ?? []) void writeLoop(out, key, 'wrapper', cfg.writeEveryMs, wrapperWrite(key));
const rotating = cfg.rotating;
if (rotating !== undefined) {
  void rotatingReader(out, rotating, (key) => redis.get(key));
  sampleCounter(out, () => hk.stats().recentReadsUsed);
  if (rotating.writeSlot !== undefined)
    void rotatingWriter(out, rotating, 'wrapper', (key, value) => wrapperWrite(key)(value));
}
process.send?.({ type: 'ready' });
