/**
 * Benchmark 5 — memory under key cardinality floods.
 *
 * SDK: one instance tracks 1M never-seen keys/s for 10 s with a planted key at 3 × the threshold;
 * heap growth after full GCs and the peak, and whether the planted key was still promoted. The
 * naive client (a Map of every key seen since its last 500 ms flush) runs the same flood.
 * Hub: generators report never-seen keys at 10M/min (167k records/s) with a planted key riding
 * along; the hub's heap after full GC, its peak, and whether it promoted the planted key. The
 * naive hub (exact window for every key) takes the same flood in JSON.
 * Service: the heap after full GCs of a service process holding plain ioredis and of one holding
 * ioredis + hotkey (connected to a hub), side by side on one redis-server, idle (the SDK's fixed
 * cost over its client) and after a read sweep of 1M distinct keys, each read once, through
 * `hk.get` (whose loader reads through the wrapped client, so such a key counts twice and earns
 * a counter) or the wrapped client (flat: the cost must not grow with the keys read). The service
 * processes run the built packages under plain node (memory-service.worker.mjs).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchMain, forkWorker, type BenchRow } from './harness.ts';
import { startServer, type ServerKind } from './server-process.ts';
import { RedisServer } from '../support/redis-server.ts';
import { delay } from '../support/wait.ts';

const THRESHOLD = 1000;
const MB = 1024 * 1024;

interface SdkMemory {
  heapBefore: number;
  heapAfter: number;
  heapPeak: number;
  achievedRate: number;
  plantedPromoted: boolean;
  plantedHot: boolean;
}

async function sdkFlood(kind: 'sdk' | 'naive', durationMs: number): Promise<SdkMemory> {
  const server = await startServer(kind === 'sdk' ? 'hub' : 'naive', { threshold: THRESHOLD });
  const worker = forkWorker(
    new URL('./memory-sdk.worker.ts', import.meta.url),
    [kind, server.url, String(1_000_000), String(durationMs), String(3 * THRESHOLD)],
    {
      execArgv: ['--expose-gc'],
    },
  );
  try {
    return await worker.waitFor<SdkMemory>('memory', durationMs + 60_000);
  } finally {
    await worker.kill();
    await server.stop();
  }
}

async function hubFlood(kind: ServerKind, durationMs: number) {
  const server = await startServer(kind, { threshold: THRESHOLD });
  const generator = forkWorker(new URL('./ingest-load.worker.ts', import.meta.url));
  try {
    const rate = 10_000_000 / 60;
    generator.send({
      type: 'start',
      url: server.url,
      protocol: kind === 'naive' ? 'json' : 'msgpack',
      connections: 2,
      seed: 1,
      distinct: true,
      rate,
      planted: { key: 'planted:hub', perSecond: 3 * THRESHOLD },
    });
    await generator.waitFor('ready', 30_000);
    const heapBefore = await server.gcHeap();
    generator.send({ type: 'go', durationMs });
    let peak = heapBefore;
    let finished = false;
    const done = generator
      .waitFor<{ records: number; startedAt: number; drainedAt: number; sawPlanted: boolean }>(
        'done',
        durationMs + 120_000,
      )
      .finally(() => (finished = true));
    while (!finished) {
      await delay(500);
      peak = Math.max(peak, (await server.stats()).heapUsed);
    }
    const result = await done;
    const heapAfter = await server.gcHeap();
    return {
      heapBefore,
      heapAfter,
      peak,
      sawPlanted: result.sawPlanted,
      achievedRate: (result.records * 1000) / (result.drainedAt - result.startedAt),
    };
  } finally {
    await generator.kill();
    await server.stop();
  }
}

interface Heap {
  heapUsed: number;
  arrayBuffers: number;
}
interface ServiceMemory {
  fixed: Heap;
  swept: Heap;
  peak: Heap;
  reads: number;
  readsPerSecond: number;
  extra: Record<string, number>;
}

/** The newest modification time under `dir` of files passing `keep`. */
function newest(dir: string, keep: (name: string) => boolean): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && keep(e.name)) t = Math.max(t, statSync(join(e.parentPath, e.name)).mtimeMs);
  }
  return t;
}

/** The service processes load sdk/dist: rebuild it (bounded) when a source is newer than the build. */
function ensureSdkBuilt(): void {
  const sdk = fileURLToPath(new URL('../../sdk/', import.meta.url));
  const built = existsSync(join(sdk, 'dist/index.js')) ? statSync(join(sdk, 'dist/index.js')).mtimeMs : 0;
  if (newest(join(sdk, 'src'), (n) => n.endsWith('.ts') && !n.includes('.test')) <= built) return;
  // the package's own build (declarations with their docs, JavaScript without comments)
  const run = spawnSync('pnpm', ['run', 'build'], { cwd: sdk, stdio: 'inherit', timeout: 300_000 });
  if (run.status !== 0)
    throw new Error(`building the SDK failed (status ${run.status}, ${run.error?.message ?? ''}): run pnpm build`);
}

/** Both service kinds, one after the other, on one redis-server and one hub. */
async function serviceSweep(keys: number): Promise<{ plain: ServiceMemory; ours: ServiceMemory }> {
  ensureSdkBuilt();
  const redis = await RedisServer.start();
  const hub = await startServer('hub', { threshold: THRESHOLD });
  const run = async (kind: string) => {
    const worker = forkWorker(
      new URL('./memory-service.worker.mjs', import.meta.url),
      [JSON.stringify({ kind, redisPort: redis.port, hubUrl: hub.url, keys, readsPerKey: 1 })],
      { tsx: false, execArgv: ['--expose-gc'] },
    );
    try {
      return await worker.waitFor<ServiceMemory>('memory', 300_000);
    } finally {
      await worker.kill();
    }
  };
  try {
    return { plain: await run('ioredis'), ours: await run('ioredis+hotkey') };
  } finally {
    await hub.stop();
    await redis.stop();
  }
}

/** heap + array buffers (typed arrays' stores live outside the JS heap but are the SDK's memory too) */
const total = (h: Heap) => h.heapUsed + h.arrayBuffers;

function serviceRows(keys: number, { plain, ours }: { plain: ServiceMemory; ours: ServiceMemory }): BenchRow[] {
  const mb = (n: number) => `${(n / MB).toFixed(2)} MB`;
  const sweep = `${keys >= 1e6 ? `${keys / 1e6}M` : `${keys / 1e3}k`}-key read sweep`;
  return [
    {
      bench: '5 memory service',
      metric: 'heap after GC, idle (ioredis + hotkey vs plain ioredis)',
      ours: ours.fixed.heapUsed / MB,
      baseline: plain.fixed.heapUsed / MB,
      unit: 'MB',
      better: 'lower',
      note: `array buffers ${mb(ours.fixed.arrayBuffers)} (plain ${mb(plain.fixed.arrayBuffers)})`,
    },
    {
      bench: '5 memory service',
      metric: "the SDK's cost over its client, idle (heap + array buffers)",
      ours: (total(ours.fixed) - total(plain.fixed)) / MB,
      unit: 'MB',
      better: 'lower',
      target: { reach: 4 },
    },
    {
      bench: '5 memory service',
      metric: `heap after GC after a ${sweep}`,
      ours: ours.swept.heapUsed / MB,
      baseline: plain.swept.heapUsed / MB,
      unit: 'MB',
      better: 'lower',
      note: `${ours.reads} reads at ${Math.round(ours.readsPerSecond / 1000)}k/s (plain ${Math.round(plain.readsPerSecond / 1000)}k/s); after it: ${Object.entries(
        ours.extra,
      )
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    },
    {
      bench: '5 memory service',
      metric: `growth over idle after the ${sweep} (heap + array buffers)`,
      ours: (total(ours.swept) - total(ours.fixed)) / MB,
      baseline: (total(plain.swept) - total(plain.fixed)) / MB,
      unit: 'MB',
      better: 'lower',
      target: { aim: 0.5 },
      note: `SDK's cost after the sweep ${mb(total(ours.swept) - total(plain.swept))}`,
    },
    {
      bench: '5 memory service',
      metric: `peak during the ${sweep}, above idle (heap + array buffers)`,
      ours: (total(ours.peak) - total(ours.fixed)) / MB,
      baseline: (total(plain.peak) - total(plain.fixed)) / MB,
      unit: 'MB',
      better: 'lower',
    },
  ];
}

benchMain(async ({ quick }) => {
  const sdkMs = quick ? 2000 : 10_000;
  const hubMs = quick ? 3000 : 30_000;
  const sweepKeys = quick ? 100_000 : 1_000_000;
  const services = serviceRows(sweepKeys, await serviceSweep(sweepKeys));
  const ours = await sdkFlood('sdk', sdkMs);
  const naive = await sdkFlood('naive', sdkMs);
  const hub = await hubFlood('hub', hubMs);
  const naiveHub = await hubFlood('naive', hubMs);
  const yes = (b: boolean) => (b ? 'yes' : 'NO');
  const rows: BenchRow[] = [
    {
      bench: '5 memory SDK',
      metric: `heap growth, 1M distinct keys/s × ${sdkMs / 1000} s`,
      ours: (ours.heapAfter - ours.heapBefore) / MB,
      baseline: (naive.heapAfter - naive.heapBefore) / MB,
      unit: 'MB',
      better: 'lower',
      target: { aim: 32 },
      note: `reached ${Math.round(ours.achievedRate / 1000)}k keys/s (naive ${Math.round(naive.achievedRate / 1000)}k); planted key promoted: ${yes(ours.plantedPromoted)}, hot at end: ${yes(ours.plantedHot)} (naive ${yes(naive.plantedPromoted)})`,
    },
    {
      bench: '5 memory SDK',
      metric: 'peak heap above start',
      ours: (ours.heapPeak - ours.heapBefore) / MB,
      baseline: (naive.heapPeak - naive.heapBefore) / MB,
      unit: 'MB',
      better: 'lower',
      target: { aim: 32 },
    },
    {
      bench: '5 memory hub',
      metric: `heap after GC, 10M distinct keys/min × ${hubMs / 1000} s`,
      ours: hub.heapAfter / MB,
      baseline: naiveHub.heapAfter / MB,
      unit: 'MB',
      better: 'lower',
      target: { aim: 256 },
      note: `reached ${Math.round(hub.achievedRate / 1000)}k rec/s (naive ${Math.round(naiveHub.achievedRate / 1000)}k); planted key promoted: ${yes(hub.sawPlanted)} (naive ${yes(naiveHub.sawPlanted)}); start ${Math.round(hub.heapBefore / MB)} MB`,
    },
    {
      bench: '5 memory hub',
      metric: 'peak heap',
      ours: hub.peak / MB,
      baseline: naiveHub.peak / MB,
      unit: 'MB',
      better: 'lower',
      target: { aim: 256 },
    },
  ];
  return [...services, ...rows];
});
