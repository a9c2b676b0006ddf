/**
 * Benchmark 12a — reader waits across a hot key's TTL boundaries: one SDK instance
 * reads a hot key ~20 000 times a second through a loader of 2 ms; the share of get() calls that
 * waited on the loader (the SDK's count; and those that took ≥ 1 ms, which adds event-loop
 * stalls) and the p99.9 get() latency. Without refresh-ahead (refreshAheadRatio 1, staleIfErrorMs 0: the value expires and the next readers
 * wait for its reload) beside refresh-ahead (the default 0.8) in the same run, against one real
 * hub in its own process. cacheTtlMs is 1000 and the run 10 s: 10 TTL boundaries (a 30 s run with a 5 s
 * TTL would cross 6, in three times the time).
 */
import { HotKeyClient } from '@hotkey/sdk';
import { benchMain, percentile, type BenchRow } from './harness.ts';
import { startServer } from './server-process.ts';
import { delay, waitFor } from '../support/wait.ts';

const KEY = 'item:hot';
const TTL_MS = 1000;
const LOADER_MS = 2;
const BATCH = 20;
const WAIT_MS = 1;

interface Run {
  gets: number;
  waited: number;
  /** the SDK's own count: get() calls that started or joined a load in the foreground */
  foreground: number;
  p999: number;
  loaderCalls: number;
}

async function readFor(url: string, app: string, durationMs: number): Promise<Run> {
  const client = new HotKeyClient({ app, hubs: url, instanceId: `waits-${app}` });
  try {
    await client.ready({ signal: AbortSignal.timeout(10_000) });
    for (let i = 0; i < 200; i++) client.track(KEY);
    await waitFor(`${app}: the hub promotes the key`, () => client.isHot(KEY), 5000);
    let loaderCalls = 0;
    const value = { price: 42 };
    const loader = () => {
      loaderCalls++;
      return new Promise<object>((resolve) => setTimeout(() => resolve(value), LOADER_MS));
    };
    await client.get(KEY, loader); // the first load is not counted: nothing could be cached before it
    loaderCalls = 0;
    const before = client.stats();
    const latencies = new Float64Array(Math.ceil((durationMs / WAIT_MS) * BATCH * 1.5));
    let n = 0;
    const end = performance.now() + durationMs;
    while (performance.now() < end && n + BATCH <= latencies.length) {
      const reads: Promise<unknown>[] = [];
      for (let i = 0; i < BATCH; i++) {
        const slot = n++;
        const t0 = performance.now();
        reads.push(client.get(KEY, loader).then(() => (latencies[slot] = performance.now() - t0)));
      }
      await delay(WAIT_MS);
      if (!client.isHot(KEY)) throw new Error(`${app}: the key cooled down during the run`);
      void Promise.all(reads);
    }
    await delay(50); // let the last batch settle
    const got = latencies.subarray(0, n);
    let waited = 0;
    for (const ms of got) if (ms >= 1) waited++;
    const after = client.stats();
    const foreground =
      after.loads - before.loads - (after.refreshes - before.refreshes) + (after.coalesced - before.coalesced);
    return { gets: n, waited, foreground, p999: percentile(got, 99.9), loaderCalls };
  } finally {
    await client.close();
  }
}

benchMain(async ({ quick }) => {
  const durationMs = quick ? 2000 : 10_000;
  const hub = await startServer('hub', {
    threshold: 50,
    apps: {
      today: { cacheTtlMs: TTL_MS, refreshAheadRatio: 1, staleIfErrorMs: 0 },
      ahead: { cacheTtlMs: TTL_MS },
    },
  });
  let today: Run;
  let ahead: Run;
  try {
    today = await readFor(hub.url, 'today', durationMs);
    ahead = await readFor(hub.url, 'ahead', durationMs);
  } finally {
    await hub.stop();
  }
  const note = `${(durationMs / 1000).toFixed(0)} s, cacheTtlMs ${TTL_MS}, loader ${LOADER_MS} ms, ${ahead.gets} / ${today.gets} gets`;
  const rows: BenchRow[] = [
    {
      bench: '12a reader waits',
      metric: 'share of get() that waited on the loader',
      ours: (100 * ahead.foreground) / ahead.gets,
      baseline: (100 * today.foreground) / today.gets,
      unit: '%',
      better: 'lower',
      target: { reach: 0 },
      note: `the SDK's count of get() that started or joined a foreground load; ${note}`,
    },
    {
      bench: '12a reader waits',
      metric: 'share of get() that took ≥ 1 ms',
      ours: (100 * ahead.waited) / ahead.gets,
      baseline: (100 * today.waited) / today.gets,
      unit: '%',
      better: 'lower',
      note: `${ahead.waited} vs ${today.waited}: loader waits plus event-loop stalls (GC, a loaded machine)`,
    },
    {
      bench: '12a reader waits',
      metric: 'p99.9 get() latency on the hot key',
      ours: ahead.p999,
      baseline: today.p999,
      unit: 'ms',
      better: 'lower',
      note: 'baseline: today (no refresh-ahead)',
    },
    {
      bench: '12a reader waits',
      metric: 'loader calls per cacheTtlMs',
      ours: ahead.loaderCalls / (durationMs / TTL_MS),
      baseline: today.loaderCalls / (durationMs / TTL_MS),
      unit: 'calls',
      better: 'lower',
      note: 'refresh-ahead reloads every ~0.8 cacheTtlMs, in the background',
    },
  ];
  return rows;
});
