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
 *                                                      'get', or 'mget' (one MGET of every read key)
 *   ['w', key, version, start, end, acked, kind]       a write; acked: the call resolved and its
 *                                                      invalidation was acknowledged; kind: wrapper,
 *                                                      update (value push) or plain
 */
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { Redis } from 'ioredis';
import { hostNow } from '../support/host-clock.ts';
import { slowConnectsTo } from './slow-connect.ts';
import { delay } from '../support/wait.ts';

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
}

const cfg = JSON.parse(process.env.CK_CONFIG ?? '{}') as Config;
const now = hostNow;
const tick = () => new Promise<void>((r) => setImmediate(r));

type Rec = (string | number | boolean)[];
let batch: Rec[] = [];
let running = true;

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
const invalidateFailed = new Set<string>();
const redis = withHotKeys(new Redis(redisOpts), hk, { onInvalidateError: (_err, key) => invalidateFailed.add(key) });
const updater = withHotKeys(new Redis(redisOpts), hk, {
  writes: 'update',
  onInvalidateError: (_err, key) => invalidateFailed.add(key),
});
const plain = new Redis(redisOpts);
redis.on('error', () => {});
updater.on('error', () => {});
plain.on('error', () => {});

async function readLoop(): Promise<void> {
  let n = 0;
  while (running) {
    for (const key of cfg.readKeys) {
      const start = now();
      try {
        const v = await redis.get(key);
        batch.push(['r', key, v === null ? 0 : Number(v), start, now(), 'get']);
      } catch {
        // Redis down: no read to judge
      }
    }
    if (cfg.raceKey !== undefined) {
      const key = cfg.raceKey;
      const start = now();
      try {
        // a slow fill: the value is read, then held back — an invalidation lands in between
        const v = await hk.get(key, async () => {
          const value = await plain.get(key);
          await delay(15);
          return value;
        });
        batch.push(['r', key, v === null ? 0 : Number(v), start, now(), 'get']);
      } catch {
        // Redis down
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
      const values = await redis.mget(cfg.readKeys);
      const end = now();
      cfg.readKeys.forEach((key, i) => {
        const v = values[i];
        batch.push(['r', key, v === null || v === undefined ? 0 : Number(v), start, end, 'mget']);
      });
    } catch {
      // Redis down: no read to judge
    }
    if (++n % 8 === 0) await delay(2);
    else await tick();
  }
}

async function wrapperWriter(key: string, client: Redis = redis, kind = 'wrapper'): Promise<void> {
  let version = Math.floor(now()); // grows across restarts of this process
  while (running) {
    const v = ++version;
    const start = now();
    invalidateFailed.delete(key);
    let acked = false;
    try {
      await client.set(key, String(v));
      acked = !invalidateFailed.has(key);
    } catch {
      acked = false;
    }
    batch.push(['w', key, v, start, now(), acked, kind]);
    await delay(cfg.writeEveryMs);
  }
}

async function plainWriter(key: string): Promise<void> {
  let version = Math.floor(now());
  while (running) {
    const v = ++version;
    const start = now();
    let ok = false;
    try {
      await plain.set(key, String(v));
      ok = true;
    } catch {
      ok = false;
    }
    batch.push(['w', key, v, start, now(), ok, 'plain']);
    await delay(cfg.writeEveryMs);
  }
}

const flusher = setInterval(() => {
  if (batch.length === 0 || !process.connected) return;
  process.send?.({ type: 'records', records: batch });
  batch = [];
}, 100);

process.on('message', (msg: { type: string; port?: number; ms?: number }) => {
  if (msg.type === 'slow-connect') {
    // this process's next connections to that port are held (its Hello reaches the hub late)
    void slowConnectsTo(msg.port!, msg.ms!).then(() => process.send?.({ type: 'slow-connect-ready' }));
    return;
  }
  if (msg.type !== 'stop') return;
  running = false;
  clearInterval(flusher);
  const { updatesSent, updatesInjected, valuesInjected } = hk.stats().push;
  process.send?.({ type: 'records', records: batch, push: { updatesSent, updatesInjected, valuesInjected } }, () => {
    batch = [];
    void Promise.allSettled([hk.close(), redis.quit(), updater.quit(), plain.quit()]).finally(() => process.exit(0));
  });
});

// the parent is gone (or its test failed): nobody reads our records, stop
process.on('disconnect', () => process.exit(0));

const loops: Promise<void>[] = [];
for (let i = 0; i < cfg.readers; i++) loops.push(readLoop());
for (let i = 0; i < (cfg.mgetReaders ?? 0); i++) loops.push(mgetLoop());
for (const key of cfg.wrapperWrites ?? []) loops.push(wrapperWriter(key));
for (const key of cfg.updateWrites ?? []) loops.push(wrapperWriter(key, updater, 'update'));
if (cfg.plainWrites !== undefined) loops.push(plainWriter(cfg.plainWrites));
process.send?.({ type: 'ready' });
