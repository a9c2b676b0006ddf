/**
 * One process of the consistency checker (consistency-checker.test.ts): an SDK instance with an
 * ioredis client wrapped by withHotKeys, running reader loops and, by role, a wrapper writer or
 * a plain-ioredis (outside) writer. Every operation is recorded with times on one clock shared
 * by every process of the machine (hostNow, CLOCK_MONOTONIC) and sent to the
 * parent in batches over IPC. Configured by the CK_CONFIG environment variable (JSON). The parent
 * may ask it (IPC `slow-connect`) to hold its connections to one hub port for a while
 * (slow-connect.ts): a reader slow to reach a hub that just joined.
 *
 * Records (arrays, to keep IPC small):
 *   ['r', key, version, start, end, via]               a read (version 0: the key was absent); via:
 *                                                      'get', or 'mget' (one MGET of every read key),
 *                                                      or a rotating key's 'ckf-first' / 'ckf-burst' / 'ckf'
 *   ['w', key, version, start, end, acked, kind]       a write; acked: the call resolved (all its
 *                                                      caller is told); kind: wrapper,
 *                                                      update (value push) or plain
 *   ['u', time, n]                                     n more loads answered by a kept cold read
 *                                                      (hk.stats().recentReadsUsed), rotating role only
 */
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { Redis } from 'ioredis';
import { slowConnectsTo } from './slow-connect.ts';
import { delay } from '../support/wait.ts';
import { readLoop, recordReads, startRecordsOut, writeLoop } from './consistency-records-out.ts';
import { rotatingReader, rotatingWriter, sampleCounter, type RotatingConfig } from './consistency-rotating.ts';

interface Config {
  id: string;
  /** seed hub URL(s) */
  hub: string | string[];
  redisPort: number;
  /** keys read through the wrapper */
  readKeys: string[];
  /** key read through hk.get with a slow loader (the fill race) */
  raceKey?: string;
  readers: number;
  /** loops reading every read key with one MGET each round (multi-key reads, multi-read.ts) */
  mgetReaders?: number;
  /** key this process writes through the wrapper */
  wrapperWrites?: string[];
  /** keys this process writes through a wrapper with `writes: 'update'` (value push of shared keys) */
  updateWrites?: string[];
  /** key this process writes with a plain ioredis client (outside the SDK) */
  plainWrites?: string;
  writeEveryMs: number;
  /**
   * the rotating-key role (consistency-rotating.ts): every process with it reads each round's key
   * through a wrapper that tracks the prefix by broadcast; `writeSlot` makes it a writer of its
   * rounds, through the wrapper, or with the plain client when it is the outside writer (`plainWrites`)
   */
  rotating?: RotatingConfig;
}

const cfg = JSON.parse(process.env.CK_CONFIG ?? '{}') as Config;

const hk = new HotKeyClient({
  app: 'ck',
  hubs: typeof cfg.hub === 'string' ? [cfg.hub] : cfg.hub,
  instanceId: cfg.id,
  reconnectMinMs: 50,
  reconnectMaxMs: 300,
});
hk.on('error', () => {});
const redisOpts = {
  port: cfg.redisPort,
  host: '127.0.0.1',
  maxRetriesPerRequest: 1,
  retryStrategy: () => 100,
  lazyConnect: false,
};
const redis = withHotKeys(new Redis(redisOpts), hk, {
  ...(cfg.rotating && { tracking: { prefixes: [cfg.rotating.prefix] } }),
});
const updater = withHotKeys(new Redis(redisOpts), hk, { writes: 'update' });
const plain = new Redis(redisOpts);
redis.on('error', () => {});
updater.on('error', () => {});
plain.on('error', () => {});

const out = startRecordsOut({
  close: () => [hk.close(), redis.quit(), updater.quit(), plain.quit()],
  finalExtra: () => {
    const { updatesSent, updatesInjected, valuesInjected } = hk.stats().push;
    return { push: { updatesSent, updatesInjected, valuesInjected } };
  },
});

const getRound = async () => {
  for (const key of cfg.readKeys) await recordReads(out, [key], 'get', async () => [await redis.get(key)]);
  if (cfg.raceKey !== undefined) {
    const key = cfg.raceKey;
    // a slow fill: the value is read, then held back — an invalidation lands in between
    await recordReads(out, [key], 'get', async () => [
      await hk.get(key, async () => {
        const value = await plain.get(key);
        await delay(15);
        return value;
      }),
    ]);
  }
};
const mgetRound = async () => {
  await recordReads(out, cfg.readKeys, 'mget', () => redis.mget(cfg.readKeys));
};

/** A write counts as acknowledged when it resolves: all a caller without `onInvalidateError` is told. */
const wrapperWrite = (client: Redis, key: string) => async (value: string) => {
  await client.set(key, value);
  return true;
};

const plainWrite = (key: string) => async (value: string) => {
  await plain.set(key, value);
  return true;
};

process.on('message', (msg: { type: string; port?: number; ms?: number }) => {
  if (msg.type !== 'slow-connect') return;
  // this process's next connections to that port are held (its Hello reaches the hub late)
  void slowConnectsTo(msg.port!, msg.ms!).then(() => process.send?.({ type: 'slow-connect-ready' }));
});

const loops: Promise<void>[] = [];
for (let i = 0; i < cfg.readers; i++) loops.push(readLoop(out, getRound));
for (let i = 0; i < (cfg.mgetReaders ?? 0); i++) loops.push(readLoop(out, mgetRound));
const every = cfg.writeEveryMs;
for (const key of cfg.wrapperWrites ?? []) loops.push(writeLoop(out, key, 'wrapper', every, wrapperWrite(redis, key)));
for (const key of cfg.updateWrites ?? []) loops.push(writeLoop(out, key, 'update', every, wrapperWrite(updater, key)));
if (cfg.plainWrites !== undefined)
  loops.push(writeLoop(out, cfg.plainWrites, 'plain', every, plainWrite(cfg.plainWrites)));
const rotating = cfg.rotating;
if (rotating !== undefined) {
  loops.push(rotatingReader(out, rotating, (key) => redis.get(key)));
  sampleCounter(out, () => hk.stats().recentReadsUsed);
  if (rotating.writeSlot !== undefined)
    loops.push(
      cfg.plainWrites !== undefined
        ? rotatingWriter(out, rotating, 'plain', (key, value) => plainWrite(key)(value))
        : rotatingWriter(out, rotating, 'wrapper', (key, value) => wrapperWrite(redis, key)(value)),
    );
}
process.send?.({ type: 'ready' });
