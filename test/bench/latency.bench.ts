/**
 * Benchmark 2 — detection latency: from the start of a surge on a fresh key to the moment every
 * SDK instance holds it as hot, with 20, 100 and 500 SDK connections in two separate processes.
 *
 * The surge is spread evenly over all instances at 10 × the rule's threshold in total (a flash
 * key at 10k accesses/s against a 1000/s rule), so detection needs ~100 ms of accesses; the rest
 * is flush interval, hub decision and broadcast. p50 / p99 are over every (instance, surge) pair.
 * The naive baseline runs the same surges with its 500 ms batching.
 */
import { benchMain, percentile, type BenchRow, type Worker } from './harness.ts';
import { startServer } from './server-process.ts';
import { connectSdkWorkers } from './sdk-workers.ts';
import { hostNow } from '../support/host-clock.ts';
import { delay } from '../support/wait.ts';

const THRESHOLD = 1000;
const SURGE_FACTOR = 10;
const WORKERS = 2;

async function run(
  kind: 'sdk' | 'naive',
  sdks: number,
  surges: number,
): Promise<{ latencies: number[]; missing: number }> {
  const server = await startServer(kind === 'sdk' ? 'hub' : 'naive', { threshold: THRESHOLD });
  const workers: Worker[] = [];
  try {
    await connectSdkWorkers(workers, server.url, sdks, kind, 90_000, WORKERS);
    // let Config frames (instance counts -> local thresholds) settle before the first surge
    await delay(800);
    const latencies: number[] = [];
    let missing = 0;
    for (let s = 0; s < surges; s++) {
      const key = `surge:${kind}:${sdks}:${s}`;
      const startAt = hostNow() + 100;
      const rate = (SURGE_FACTOR * THRESHOLD) / sdks;
      for (const w of workers) w.send({ type: 'surge', key, rate, startAt, durationMs: 5000 });
      for (const w of workers) w.send({ type: 'collect', key, deadlineMs: 6000 });
      const results = await Promise.all(
        workers.map((w) => w.waitFor<{ times: number[]; missing: number }>('promoted', 15_000)),
      );
      for (const r of results) {
        for (const t of r.times) latencies.push(t - startAt);
        missing += r.missing;
      }
      // the next surge starts on a quiet hub
      await delay(300);
    }
    return { latencies, missing };
  } finally {
    await Promise.all(workers.map((w) => w.kill()));
    await server.stop();
  }
}

benchMain(async ({ quick }) => {
  const rows: BenchRow[] = [];
  const surges = quick ? 2 : 8;
  for (const sdks of quick ? [20, 100] : [20, 100, 500]) {
    const ours = await run('sdk', sdks, surges);
    const naive = await run('naive', sdks, surges);
    const target = sdks === 100 ? { reach: 250, aim: 120 } : undefined;
    const miss = (r: { missing: number }) => (r.missing ? `${r.missing} never hot` : '');
    rows.push(
      {
        bench: `2 latency ${sdks} SDKs`,
        metric: 'surge → every SDK hot, p99',
        ours: percentile(ours.latencies, 99),
        baseline: percentile(naive.latencies, 99),
        unit: 'ms',
        better: 'lower',
        target,
        note: [
          `${surges} surges at ${SURGE_FACTOR}× threshold, flush 100 ms vs 500 ms`,
          miss(ours),
          naive.missing ? `naive ${miss(naive)}` : '',
        ]
          .filter(Boolean)
          .join('; '),
      },
      {
        bench: `2 latency ${sdks} SDKs`,
        metric: 'surge → every SDK hot, p50',
        ours: percentile(ours.latencies, 50),
        baseline: percentile(naive.latencies, 50),
        unit: 'ms',
        better: 'lower',
      },
    );
  }
  return rows;
});
