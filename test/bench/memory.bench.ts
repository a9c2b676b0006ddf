/**
 * Benchmark 5 — memory under key cardinality floods.
 *
 * SDK: one instance tracks 1M never-seen keys/s for 10 s with a planted key at 3 × the threshold;
 * heap growth after full GCs and the peak, and whether the planted key was still promoted. The
 * naive client (a Map of every key seen since its last 500 ms flush) runs the same flood.
 * Hub: generators report never-seen keys at 10M/min (167k records/s) with a planted key riding
 * along; the hub's heap after full GC, its peak, and whether it promoted the planted key. The
 * naive hub (exact window for every key) takes the same flood in JSON.
 */
import { benchMain, forkWorker, type BenchRow } from './harness.ts';
import { startServer, type ServerKind } from './server-process.ts';
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

benchMain(async ({ quick }) => {
  const sdkMs = quick ? 2000 : 10_000;
  const hubMs = quick ? 3000 : 30_000;
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
  return rows;
});
