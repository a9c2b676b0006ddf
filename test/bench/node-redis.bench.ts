/**
 * Benchmark 24 — node-redis side by side: plain node-redis, node-redis + hotkey (the adapter,
 * @hotkey/sdk/node-redis), node-redis's own client-side cache (`RESP: 3, clientSideCache`), ioredis +
 * hotkey and plain ioredis, each on a fresh redis-server and a fresh hub, in the same run.
 *
 * The load (node-redis.worker.ts): 4 service processes, 6,000 reads/s of one flash key that starts
 * at t = 0 (the surge), 2,000 Zipf(1.1) reads/s over 100k keys and 20 writes/s of Zipf keys, all
 * shared evenly among the services. Every client connects through a counting proxy
 * (resp-proxy.worker.ts), so what reached Redis is counted client-agnostically on every connection:
 * the flash key's GETs in the first 2 s and per second after, all GETs, the invalidation pushes Redis
 * sent. Redis's `tracking_total_items` is read at the end of the run (a fresh server per variant:
 * tracking entries outlive their clients). Heap after full GCs per service at the end of the run,
 * against the same client without caching. Write latency is the service's (a hotkey write resolves
 * once its invalidation was acknowledged; clientSideCache's write is not acknowledged anywhere).
 *
 * Then the same load over 20 service instances in 4 processes (tracking state and invalidation pushes
 * grow with instances for a cache that tracks every key every client read), and a distinct-key read
 * sweep (node-redis-sweep.worker.ts: 1M keys read once each; the heap after GC must stay flat for
 * hotkey, while clientSideCache keeps every key read).
 *
 * The service processes load the SDK as a service does, from its build (sdk/dist, rebuilt first when
 * sdk/src is newer): tsx with the workspace's source condition would put its compiled copies and
 * source maps of every SDK module on the heap being measured. (The bench's own TypeScript helpers
 * still go through tsx, the same in every column.)
 *
 * The node-redis + hotkey column needs the adapter; where it is not there, the column is reported as
 * skipped with the reason, and `node-redis+hk.get` (hk.get by hand) still gives the SDK's heap cost.
 *
 *   node --conditions=@hotkey/source --import tsx test/bench/node-redis.bench.ts [--quick]
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startHubInProcess } from '../support/hub-in-process.ts';
import { RedisServer } from '../support/redis-server.ts';
import { hostNow } from '../support/host-clock.ts';
import { within } from '../support/wait.ts';
import { benchMain, forkWorker, percentile, type BenchRow, type Worker } from './harness.ts';
import { adapterMissing, plainOf, type Variant } from './redis-clients.ts';

const FLASH_RATE = 6000;
const ZIPF_RATE = 2000;
const WRITE_RATE = 20;
const ZIPF_KEYS = 100_000;
const FLASH_KEY = 'item:flash:1001';
const BUCKET_MS = 100;
const SURGE_MS = 2000;
const MB = 1024 * 1024;
const BENCH = '24 node-redis';
/** the flash key crosses the threshold within ~1/10 s of the surge; the Zipf head (~270/s) stays under it */
const RULES = [{ match: '*', threshold: 600, windowMs: 1000, hotMs: 60_000, cacheTtlMs: 30_000 }];

const MAIN: Variant[] = ['node-redis', 'node-redis+hotkey', 'node-redis+csc', 'ioredis+hotkey', 'ioredis'];
const FLEET: Variant[] = ['node-redis', 'node-redis+hotkey', 'node-redis+csc', 'ioredis+hotkey'];
const SWEEP: Variant[] = ['node-redis', 'node-redis+hk.get', 'node-redis+hotkey', 'node-redis+csc'];
/** tsx without the source condition: `@hotkey/sdk` resolves to its build, as in a service */
const SERVICE_PROCESS = { tsx: false, execArgv: ['--import', 'tsx', '--expose-gc'] };
const SDK = fileURLToPath(new URL('../../sdk/', import.meta.url));

/** Newest modification time of the files under `dir` whose names pass `keep`. */
function newest(dir: string, keep: (name: string) => boolean): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newest(path, keep));
    else if (keep(e.name)) t = Math.max(t, statSync(path).mtimeMs);
  }
  return t;
}

/** Builds the SDK when its build is missing or older than its sources: the columns must measure this tree. */
function freshSdkBuild(): string {
  let built = 0;
  try {
    built = statSync(join(SDK, 'dist', 'index.js')).mtimeMs;
  } catch {
    // no build yet
  }
  if (built >= newest(join(SDK, 'src'), (n) => n.endsWith('.ts') && !n.endsWith('.test.ts'))) return 'sdk/dist current';
  execFileSync('pnpm', ['--filter', '@hotkey/sdk', 'run', 'build'], { cwd: SDK, stdio: 'inherit', timeout: 180_000 });
  return 'sdk/dist rebuilt';
}

interface Done {
  flashReads: number;
  reads: number;
  writes: number;
  errors: number;
  firstError?: string;
  writeMs: number[];
  heapAfterGc: number;
  cacheEntries: number;
}
interface Counts {
  gets: number;
  flashGets: number;
  flashBuckets: number[];
  pushes: number;
  connections: number;
}
interface Result {
  surgeGets: number;
  steadyPerSec: number;
  getsPerSec: number;
  /** mean over the processes, after full GCs at the end of the run */
  heapPerProcess: number;
  trackingItems: number;
  pushesPerSec: number;
  writeP50: number;
  writeP99: number;
  entriesPerInstance: number;
  flashReads: number;
  errors: number;
  firstError?: string;
}

async function populate(url: string): Promise<void> {
  const admin = new Redis(url);
  try {
    await admin.set(FLASH_KEY, 'stock:42');
    for (let from = 0; from < ZIPF_KEYS; from += 1000) {
      const args: string[] = [];
      for (let i = from; i < Math.min(ZIPF_KEYS, from + 1000); i++) args.push(`item:${i}`, `value:${i}`);
      await admin.mset(args);
    }
  } finally {
    admin.disconnect();
  }
}

/**
 * A fresh redis-server (behind the counting proxy unless `direct`) and a fresh hub: nothing carries
 * over between variants.
 */
async function withStack<T>(
  direct: boolean,
  fn: (s: { redisUrl: string; proxy: Worker | undefined; hubUrl: string; admin: Redis }) => Promise<T>,
): Promise<T> {
  const server = await RedisServer.start();
  const hub = await startHubInProcess({ config: { apps: { bench: { rules: RULES }, sweep: { rules: RULES } } } });
  const proxy = direct ? undefined : forkWorker(new URL('./resp-proxy.worker.ts', import.meta.url));
  const admin = new Redis(server.url);
  try {
    if (!proxy) return await fn({ redisUrl: server.url, proxy, hubUrl: hub.url, admin });
    proxy.send({ type: 'start', redisPort: server.port, flashKey: FLASH_KEY });
    const { port } = await proxy.waitFor<{ port: number }>('listening', 30_000);
    return await fn({ redisUrl: `redis://127.0.0.1:${port}`, proxy, hubUrl: hub.url, admin });
  } finally {
    admin.disconnect();
    await proxy?.kill();
    await server.stop();
    await within('the hub to close', hub.close(), 10_000);
  }
}

async function scenario(
  variant: Variant,
  opts: { processes: number; instances: number; durationMs: number },
): Promise<Result> {
  return withStack(false, async ({ redisUrl, proxy: counting, hubUrl, admin }) => {
    const proxy = counting!;
    await populate(redisUrl);
    const workers: Worker[] = [];
    try {
      for (let p = 0; p < opts.processes; p++) {
        const w = forkWorker(new URL('./node-redis.worker.ts', import.meta.url), [], SERVICE_PROCESS);
        workers.push(w);
        w.send({
          type: 'start',
          variant,
          redisUrl,
          hubUrl,
          instances: opts.instances,
          instanceBase: p * opts.instances,
          durationMs: opts.durationMs,
          flashRate: FLASH_RATE / opts.processes,
          zipfRate: ZIPF_RATE / opts.processes,
          writeRate: WRITE_RATE / opts.processes,
          flashKey: FLASH_KEY,
          zipfKeys: ZIPF_KEYS,
          seed: p + 1,
        });
      }
      await Promise.all(workers.map((w) => w.waitFor('ready', 90_000)));
      const startAt = hostNow() + 500;
      proxy.send({
        type: 'proxy',
        op: 'window',
        startAt,
        bucketMs: BUCKET_MS,
        buckets: Math.ceil(opts.durationMs / BUCKET_MS),
      });
      for (const w of workers) w.send({ type: 'go', startAt });
      const done = await Promise.all(workers.map((w) => w.waitFor<Done>('done', opts.durationMs + 60_000)));
      proxy.send({ type: 'proxy', op: 'read' });
      const counts = await proxy.waitFor<Counts>('counts', 10_000);
      const trackingItems = Number(/^tracking_total_items:(\d+)/m.exec(await admin.info('stats'))?.[1] ?? NaN);
      for (const w of workers) w.send({ type: 'stop' });
      const first = SURGE_MS / BUCKET_MS;
      let surgeGets = 0;
      counts.flashBuckets.forEach((n, i) => {
        if (i < first) surgeGets += n;
      });
      const seconds = opts.durationMs / 1000;
      const writeMs = Float64Array.from(done.flatMap((d) => d.writeMs)).sort();
      return {
        surgeGets,
        steadyPerSec: (counts.flashBuckets.reduce((a, n) => a + n, 0) - surgeGets) / (seconds - SURGE_MS / 1000),
        getsPerSec: counts.gets / seconds,
        heapPerProcess: done.reduce((a, d) => a + d.heapAfterGc, 0) / done.length,
        trackingItems,
        pushesPerSec: counts.pushes / seconds,
        writeP50: percentile(writeMs, 50, true),
        writeP99: percentile(writeMs, 99, true),
        entriesPerInstance: done.reduce((a, d) => a + d.cacheEntries, 0) / (opts.processes * opts.instances),
        flashReads: done.reduce((a, d) => a + d.flashReads, 0),
        errors: done.reduce((a, d) => a + d.errors, 0),
        firstError: done.find((d) => d.firstError !== undefined)?.firstError,
      };
    } finally {
      await Promise.all(workers.map((w) => w.kill()));
    }
  });
}

interface Sweep {
  heaps: number[];
  entries: number;
  readsPerSec: number;
  errors: number;
}

async function sweep(variant: Variant, keys: number): Promise<Sweep> {
  // straight to Redis: nothing to count, and the proxy's hop would only slow the sweep
  return withStack(true, async ({ redisUrl, hubUrl }) => {
    const w = forkWorker(new URL('./node-redis-sweep.worker.ts', import.meta.url), [], SERVICE_PROCESS);
    try {
      w.send({ type: 'start', variant, redisUrl, hubUrl, keys });
      return await w.waitFor<Sweep>('sweep', 600_000);
    } finally {
      await w.kill();
    }
  });
}

/** Runs each variant, or records why it could not run (a broken variant does not sink the others). */
async function each<T>(variants: Variant[], skip: Map<Variant, string>, run: (v: Variant) => Promise<T>) {
  const out = new Map<Variant, T>();
  for (const v of variants) {
    if (skip.has(v)) {
      console.error(`# ${BENCH}: ${v} skipped: ${skip.get(v)}`);
      continue;
    }
    try {
      out.set(v, await run(v));
    } catch (err) {
      const reason = String((err as Error)?.message ?? err).split('\n')[0]!;
      console.error(`# ${BENCH}: ${v} failed: ${reason}`);
      skip.set(v, `failed: ${reason}`);
    }
  }
  return out;
}

benchMain(async ({ quick }) => {
  const durationMs = quick ? 3000 : 10_000;
  const sweepKeys = quick ? 20_000 : 1_000_000;
  const build = freshSdkBuild();
  const skip = new Map<Variant, string>();
  const missing = await adapterMissing();
  if (missing) skip.set('node-redis+hotkey', missing);

  const main = await each(MAIN, skip, (v) => scenario(v, { processes: 4, instances: 1, durationMs }));
  const fleet = await each(FLEET, skip, (v) => scenario(v, { processes: 4, instances: 5, durationMs }));
  const sweeps = await each(SWEEP, skip, (v) => sweep(v, sweepKeys));

  const rows: BenchRow[] = [];
  const base = { bench: BENCH } as const;
  const skipped = (v: Variant, metric: string, unit: string) =>
    rows.push({
      ...base,
      metric: `${metric} — ${v}`,
      ours: NaN,
      unit,
      better: 'lower',
      note: `skipped: ${skip.get(v)}`,
    });
  const load = `${FLASH_RATE}/s flash + ${ZIPF_RATE}/s Zipf over ${ZIPF_KEYS / 1000}k keys + ${WRITE_RATE} writes/s`;
  for (const [label, results, variants, instances] of [
    ['4 services', main, MAIN, 1],
    ['20 instances in 4 processes', fleet, FLEET, 5],
  ] as const) {
    for (const v of variants) {
      const r = results.get(v);
      if (!r) {
        skipped(v, `${label}: all figures`, '');
        continue;
      }
      const plain = results.get(plainOf(v));
      const ref = v === plainOf(v) ? undefined : plain;
      const m = (metric: string) => `${label}: ${metric} — ${v}`;
      rows.push(
        {
          ...base,
          metric: m(`flash key GETs at Redis, first ${SURGE_MS / 1000} s of the surge`),
          ours: r.surgeGets,
          baseline: ref?.surgeGets,
          unit: 'GETs',
          better: 'lower',
          note: `${load}; ${r.flashReads} flash reads issued, ${r.errors} errors${r.firstError ? ` (${r.firstError})` : ''}; baseline: ${plainOf(v)}; ${build}`,
        },
        {
          ...base,
          metric: m('flash key GETs at Redis, steady'),
          ours: r.steadyPerSec,
          baseline: ref?.steadyPerSec,
          unit: 'GETs/s',
          better: 'lower',
        },
        {
          ...base,
          metric: m('all GETs at Redis'),
          ours: r.getsPerSec,
          baseline: ref?.getsPerSec,
          unit: 'GETs/s',
          better: 'lower',
        },
        {
          ...base,
          metric: m('Redis tracking items'),
          ours: r.trackingItems,
          baseline: ref?.trackingItems,
          unit: 'items',
          better: 'lower',
          note: `${r.entriesPerInstance.toFixed(0)} cache entries per instance at the end`,
        },
        {
          ...base,
          metric: m('invalidation pushes from Redis'),
          ours: r.pushesPerSec,
          baseline: ref?.pushesPerSec,
          unit: '/s',
          better: 'lower',
        },
        {
          ...base,
          metric: m('write p50 / p99'),
          ours: r.writeP50,
          baseline: ref?.writeP50,
          unit: 'ms',
          better: 'lower',
          note: `p99 ${r.writeP99.toFixed(1)} ms (baseline ${ref ? ref.writeP99.toFixed(1) : '—'} ms)${v.includes('hotkey') ? '; resolves after the acknowledged invalidation' : ''}`,
        },
      );
      if (instances === 1)
        rows.push({
          ...base,
          metric: m('heap after GC per service'),
          ours: r.heapPerProcess / MB,
          baseline: ref ? ref.heapPerProcess / MB : undefined,
          unit: 'MB',
          better: 'lower',
          note: ref ? `+${((r.heapPerProcess - ref.heapPerProcess) / MB).toFixed(1)} MB over ${plainOf(v)}` : undefined,
        });
    }
  }

  // the issue's goals, each against clientSideCache in the same run
  const hk = main.get('node-redis+hotkey');
  const csc = main.get('node-redis+csc');
  const plain = main.get('node-redis');
  const goal = (metric: string, ours: number, baseline: number | undefined, unit: string, reach?: number) =>
    rows.push({
      ...base,
      metric: `goal: ${metric}`,
      ours,
      baseline,
      unit,
      better: 'lower',
      target: reach === undefined ? undefined : { reach },
      note: hk ? undefined : `node-redis + hotkey skipped: ${skip.get('node-redis+hotkey')}`,
    });
  goal(
    'first-2-s flash GETs, node-redis + hotkey ≤ clientSideCache',
    hk?.surgeGets ?? NaN,
    csc?.surgeGets,
    'GETs',
    csc?.surgeGets,
  );
  goal(
    'Redis tracking items, node-redis + hotkey ≤ 1/100 of clientSideCache',
    hk?.trackingItems ?? NaN,
    csc?.trackingItems,
    'items',
    csc ? csc.trackingItems / 100 : undefined,
  );
  goal(
    'heap after GC per service over plain node-redis, hotkey ≤ 4 MB (baseline: clientSideCache)',
    hk && plain ? (hk.heapPerProcess - plain.heapPerProcess) / MB : NaN,
    csc && plain ? (csc.heapPerProcess - plain.heapPerProcess) / MB : undefined,
    'MB',
    4,
  );

  // the sweep: growth over the sweep, and the cost over plain node-redis at its end
  const plainSweep = sweeps.get('node-redis');
  for (const v of SWEEP) {
    const s = sweeps.get(v);
    if (!s) {
      skipped(v, `${sweepKeys} distinct keys read: heap growth after GC`, 'MB');
      continue;
    }
    const growth = (x: Sweep) => (x.heaps[x.heaps.length - 1]! - x.heaps[0]!) / MB;
    const cost = plainSweep && v !== 'node-redis' ? (s.heaps.at(-1)! - plainSweep.heaps.at(-1)!) / MB : undefined;
    rows.push({
      ...base,
      metric: `${sweepKeys} distinct keys read: heap growth after GC — ${v}`,
      ours: growth(s),
      baseline: plainSweep && v !== 'node-redis' ? growth(plainSweep) : undefined,
      unit: 'MB',
      better: 'lower',
      target: v.includes('hk') || v.includes('hotkey') ? { reach: 1 } : undefined,
      note: `after each quarter: ${s.heaps.map((h) => (h / MB).toFixed(1)).join(' / ')} MB; ${s.entries} cache entries; ${Math.round(s.readsPerSec)} reads/s${s.errors ? `, ${s.errors} errors` : ''}${cost === undefined ? '' : `; ${cost >= 0 ? '+' : ''}${cost.toFixed(1)} MB over plain node-redis at the end`}`,
    });
  }
  const sdkSweep = sweeps.get('node-redis+hotkey') ?? sweeps.get('node-redis+hk.get');
  const cscSweep = sweeps.get('node-redis+csc');
  goal(
    `heap after GC over plain node-redis after ${sweepKeys} distinct keys, hotkey ≤ 4 MB (baseline: clientSideCache)`,
    sdkSweep && plainSweep ? (sdkSweep.heaps.at(-1)! - plainSweep.heaps.at(-1)!) / MB : NaN,
    cscSweep && plainSweep ? (cscSweep.heaps.at(-1)! - plainSweep.heaps.at(-1)!) / MB : undefined,
    'MB',
    4,
  );
  rows[rows.length - 1]!.note = sweeps.has('node-redis+hotkey')
    ? 'through the adapter'
    : `through hk.get by hand (node-redis + hotkey: ${skip.get('node-redis+hotkey') ?? 'not run'})`;
  return rows;
});
