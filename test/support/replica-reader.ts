/**
 * A reader process of the replica staleness checker (test/cluster/ioredis-replicas.test.ts): SDK
 * instances, each with its own wrapped ioredis client (a Cluster or a standalone Redis), reading
 * one key in loops. Every read is recorded as its start time (one clock for every process of the
 * machine: hostNow) and the version it returned (`v<n>`; 0
 * when absent). Configured by RR_CONFIG (JSON); talks to the parent over IPC:
 *   → { type: 'ready' }                 every instance reads the key through its replicas
 *   ← { type: 'stop' }
 *   → { type: 'done', starts, versions, stats }
 */
import { HotKeyClient } from '@hotkey/sdk';
import { adapterView } from '@hotkey/sdk/internal';
import { replicaStats, withHotKeys } from '@hotkey/sdk/ioredis';
import { Cluster, Redis } from 'ioredis';
import { hostNow } from './host-clock.ts';
import { delay, waitFor, within } from './wait.ts';

interface Config {
  hub: string;
  /** Cluster seed nodes; absent: standalone on `port` */
  nodes?: { host: string; port: number }[];
  port?: number;
  key: string;
  instances: number;
  loops: number;
  /** copies each instance must know before 'ready' */
  copies: number;
}

const cfg = JSON.parse(process.env.RR_CONFIG ?? '{}') as Config;
const now = hostNow;
const starts: number[] = [];
const versions: number[] = [];
let running = true;

function client(): Redis | Cluster {
  return cfg.nodes
    ? new Cluster(cfg.nodes, { redisOptions: { maxRetriesPerRequest: 1 } })
    : new Redis({ host: '127.0.0.1', port: cfg.port!, maxRetriesPerRequest: 1 });
}

const instances = Array.from({ length: cfg.instances }, (_, i) => {
  const hk = new HotKeyClient({ app: 'shop', hubs: [cfg.hub], instanceId: `${process.pid}-${i}`, flushIntervalMs: 50 });
  return { hk, redis: withHotKeys(client(), hk) };
});

/** the read loops, awaited when the parent says stop */
const loops: Promise<void>[] = [];

async function loop(redis: Redis | Cluster): Promise<void> {
  while (running) {
    const start = now();
    try {
      const value = await redis.get(cfg.key);
      starts.push(start);
      versions.push(value === null ? 0 : Number(value.slice(1)));
    } catch {
      await delay(5);
    }
    if (starts.length % 64 === 0) await new Promise((r) => setImmediate(r));
  }
}

process.on('message', async (m: { type: string }) => {
  if (m.type !== 'stop') return;
  running = false;
  // a loop still inside a read after the deadline is left behind: its instance closes next
  await within('the read loops to stop', Promise.all(loops), 5000).catch(() => undefined);
  const stats = { hits: 0, misses: 0, primary: 0, fills: 0, voided: 0, deleted: 0 };
  for (const { redis } of instances) {
    const s = replicaStats(redis);
    if (s) for (const k of Object.keys(stats) as (keyof typeof stats)[]) stats[k] += s[k];
  }
  await Promise.all(instances.map(({ hk }) => hk.close()));
  for (const { redis } of instances) redis.disconnect();
  // exit only once the message is out (process.send is asynchronous)
  process.send!({ type: 'done', starts, versions, stats }, () => process.exit(0));
});

await Promise.all(instances.map(({ hk }) => hk.ready({ signal: AbortSignal.timeout(15_000) })));
for (const { redis } of instances) for (let l = 0; l < cfg.loops; l++) loops.push(loop(redis));
try {
  await waitFor(
    `${cfg.key} with ${cfg.copies} copies on every instance`,
    () => instances.every(({ hk }) => adapterView(hk).replicasOf(cfg.key) >= cfg.copies),
    30_000,
    20,
  );
} catch {
  process.send!({ type: 'error', message: `${cfg.key} never got ${cfg.copies} copies here` });
}
process.send!({ type: 'ready' });
