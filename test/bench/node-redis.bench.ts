/**
 * Benchmark 24 — node-redis side by side: plain node-redis, node-redis + hotkey (the adapter,
 * @hotkey/sdk/node-redis), node-redis's own client-side cache (`RESP: 3, clientSideCache`), ioredis +
 * hotkey and plain ioredis, each on a fresh redis-server and a fresh hub, in the same run
 * (node-redis-stack.ts). The hotkey variants run the SDK with its defaults, as a user gets them,
 * and `+bcast` with `tracking: { prefixes: [''] }` (every key tracked by broadcast, redis-clients.ts).
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
 * Read and write errors are a row of their own for every variant and every part (target 0), named
 * by the first error's class: a client under overload fails reads rather than slowing them
 * (node-redis 6 rejects a command it has not written to its socket within 5 s, its default command
 * timeout, with a TimeoutError that has no message: a service process starved of CPU on a saturated
 * machine, or stalled, sees them, with or without hotkey). Reads the load owed but could not issue
 * (5,000 in flight per process) are counted too.
 *
 * Parts (`--parts main,arrivals,fleet,sweep,heap`, all by default; `--variants a,b` runs only those):
 * - main: the load above for 10 s, each tick's operations issued in one synchronous job.
 * - arrivals: the first 2 s of the same surge (3 s runs) with each operation issued in its own
 *   event-loop turn, as requests reach a service (worker 'macrotask' arrivals), for plain
 *   node-redis, node-redis + hotkey, clientSideCache and ioredis + hotkey, beside main's figures:
 *   one job per tick flatters whatever a client merges per job. `--arrivals macrotask` runs main
 *   and fleet that way and this part one job per tick.
 * - fleet: the main load over 20 service instances in 4 processes (tracking state and invalidation
 *   pushes grow with instances for a cache that tracks every key every client read).
 * - sweep: 1M distinct keys read once each (node-redis-sweep.worker.ts); the heap after GC must stay
 *   flat for hotkey, while clientSideCache keeps every key read. `hk.get` by hand is swept only
 *   where the adapter is missing.
 * - heap: where the SDK's MBs go (node-redis-heap.worker.ts): one process takes a service's steps
 *   from a plain node-redis client to a wrapped one serving a hot key, and the heap after GC is
 *   sampled after each. Measured here (100k cold reads; 20k gave the same within 0.1 MB), source
 *   maps on (tsx turns them on; the SDK ships none): `ws` and msgpackr 0.9 MB,
 *   `@hotkey/sdk/node-redis`'s modules (HotKeyClient and the adapter) 1.1 MB, a HotKeyClient
 *   connected to the hub 0.3 MB, withHotKeys with its two tracking connections 0.45 MB, the hot
 *   cached key 0.07 MB, 100k cold reads 0.3 MB: 3.1 MB in all, most of it code, flat in the keys
 *   read (one more plain node-redis client, for scale: under 0.1 MB).
 *
 * Runtime: 7.5 min for the whole bench (seven variants) on this 2-core box, idle. Main
 * and fleet keep their 10 s (clientSideCache's tracking items and entries grow with the time it
 * reads, so a shorter run would change its figures); the arrivals part runs 3 s, as it measures
 * only the first 2 s; the sweeps, most of the time, run side by side in one go: each has its own
 * redis-server and process, and a heap after GC does not depend on how busy the machine is (only
 * the sweep's reads/s, a note, does).
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
 *     [--parts main,arrivals,fleet,sweep,heap] [--variants node-redis,node-redis+hotkey] [--arrivals macrotask]
 */
import { parseArgs } from 'node:util';
import { benchMain, type BenchRow } from './harness.ts';
import { adapterMissing, plainOf, VARIANTS, type Variant } from './redis-clients.ts';
import {
  FLASH_RATE,
  freshSdkBuild,
  heapSteps,
  scenario,
  SURGE_MS,
  sweep,
  WRITE_RATE,
  ZIPF_KEYS,
  ZIPF_RATE,
  type Arrivals,
  type Result,
  type Sweep,
} from './node-redis-stack.ts';

const MB = 1024 * 1024;
const BENCH = '24 node-redis';
const PARTS = ['main', 'arrivals', 'fleet', 'sweep', 'heap'] as const;
type Part = (typeof PARTS)[number];

const HOTKEY: Variant[] = ['node-redis+hotkey', 'node-redis+hotkey+bcast'];
const MAIN: Variant[] = [
  'node-redis',
  ...HOTKEY,
  'node-redis+csc',
  'ioredis+hotkey',
  'ioredis+hotkey+bcast',
  'ioredis',
];
const ARRIVALS: Variant[] = ['node-redis', ...HOTKEY, 'node-redis+csc', 'ioredis+hotkey', 'ioredis+hotkey+bcast'];
const FLEET: Variant[] = ['node-redis', ...HOTKEY, 'node-redis+csc', 'ioredis+hotkey', 'ioredis+hotkey+bcast'];
const SWEEP: Variant[] = ['node-redis', ...HOTKEY, 'node-redis+csc'];

/** Runs each variant, or records why it could not run (a broken variant does not sink the others). */
async function each<T>(
  part: string,
  variants: Variant[],
  skip: Map<Variant, string>,
  run: (v: Variant) => Promise<T>,
  together = false,
): Promise<Map<Variant, T>> {
  const out = new Map<Variant, T>();
  const one = async (v: Variant) => {
    if (skip.has(v)) {
      console.error(`# ${BENCH}: ${part} ${v} skipped: ${skip.get(v)}`);
      return;
    }
    const t0 = performance.now();
    try {
      out.set(v, await run(v));
      console.error(`# ${BENCH}: ${part} ${v} ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    } catch (err) {
      const reason = String((err as Error)?.message ?? err).split('\n')[0]!;
      console.error(`# ${BENCH}: ${part} ${v} failed: ${reason}`);
      skip.set(v, `failed: ${reason}`);
    }
  };
  if (together) await Promise.all(variants.map(one));
  else for (const v of variants) await one(v);
  return out;
}

function options() {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      parts: { type: 'string' },
      variants: { type: 'string' },
      arrivals: { type: 'string', default: 'tick' },
    },
  });
  const parts = (values.parts?.split(',') ?? [...PARTS]) as Part[];
  for (const p of parts)
    if (!PARTS.includes(p)) throw new TypeError(`--parts: unknown part ${p}; known: ${PARTS.join(', ')}`);
  const variants = values.variants?.split(',') as Variant[] | undefined;
  for (const v of variants ?? [])
    if (!VARIANTS.includes(v)) throw new TypeError(`--variants: unknown variant ${v}; known: ${VARIANTS.join(', ')}`);
  const arrivals = values.arrivals as Arrivals;
  if (arrivals !== 'tick' && arrivals !== 'macrotask')
    throw new TypeError(`--arrivals must be tick or macrotask, got ${values.arrivals}`);
  return { parts, variants, arrivals };
}

const signed = (x: number) => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(1)}`;

benchMain(async ({ quick }) => {
  const opts = options();
  const durationMs = quick ? 3000 : 10_000;
  const sweepKeys = quick ? 20_000 : 1_000_000;
  const other: Arrivals = opts.arrivals === 'tick' ? 'macrotask' : 'tick';
  const build = freshSdkBuild();
  const skip = new Map<Variant, string>();
  const missing = await adapterMissing();
  if (missing) for (const v of HOTKEY) skip.set(v, missing);
  const wanted = (part: Part, variants: Variant[]) =>
    opts.parts.includes(part) ? variants.filter((v) => opts.variants?.includes(v) ?? true) : [];
  const sweepVariants = missing ? [...SWEEP, 'node-redis+hk.get' as const] : SWEEP;

  const main = await each('main', wanted('main', MAIN), skip, (v) =>
    scenario(v, { processes: 4, instances: 1, durationMs, arrivals: opts.arrivals }),
  );
  const apart = await each('arrivals', wanted('arrivals', ARRIVALS), skip, (v) =>
    scenario(v, { processes: 4, instances: 1, durationMs: SURGE_MS + 1000, arrivals: other }),
  );
  const fleet = await each('fleet', wanted('fleet', FLEET), skip, (v) =>
    scenario(v, { processes: 4, instances: 5, durationMs, arrivals: opts.arrivals }),
  );
  const sweeps = await each('sweep', wanted('sweep', sweepVariants), skip, (v) => sweep(v, sweepKeys), true);
  const steps = (
    await each('heap', wanted('heap', ['node-redis+hotkey']), skip, () => heapSteps(quick ? 20_000 : 100_000))
  ).get('node-redis+hotkey');

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
  const arrivalsLabel = (a: Arrivals) => (a === 'tick' ? 'one job per tick' : 'one read per event-loop turn');
  /** reads and writes that failed, and the load the services could not issue: never hidden */
  const errorRow = (metric: string, r: Result) =>
    rows.push({
      ...base,
      metric,
      ours: r.readErrors,
      unit: 'read errors',
      better: 'lower',
      target: { reach: 0 },
      note: `${r.flashErrors} of them the flash key's; ${r.writeErrors} of ${r.writes} writes failed; ${r.reads} reads issued, ${r.skipped} skipped (too many in flight)${r.firstError ? `; first: ${r.firstError}` : ''}`,
    });
  for (const [label, results, variants, instances] of [
    [`4 services, ${arrivalsLabel(opts.arrivals)}`, main, wanted('main', MAIN), 1],
    [`20 instances in 4 processes, ${arrivalsLabel(opts.arrivals)}`, fleet, wanted('fleet', FLEET), 5],
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
          note: `${load}; ${r.surgeReads} flash reads issued in the first ${SURGE_MS / 1000} s, ${r.flashReads} in all; baseline: ${plainOf(v)}; ${build}`,
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
      errorRow(m('read errors'), r);
      if (instances === 1)
        rows.push({
          ...base,
          metric: m('heap after GC per service'),
          ours: r.heapPerProcess / MB,
          baseline: ref ? ref.heapPerProcess / MB : undefined,
          unit: 'MB',
          better: 'lower',
          note: ref ? `${signed((r.heapPerProcess - ref.heapPerProcess) / MB)} MB over ${plainOf(v)}` : undefined,
        });
    }
  }

  // the surge with the other arrivals, beside main's: one row per variant, main's figure as its baseline
  for (const v of wanted('arrivals', ARRIVALS)) {
    const r = apart.get(v);
    const label = `4 services, ${arrivalsLabel(other)}`;
    if (!r) {
      skipped(v, `${label}: all figures`, '');
      continue;
    }
    const ref = main.get(v);
    rows.push({
      ...base,
      metric: `${label}: flash key GETs at Redis, first ${SURGE_MS / 1000} s of the surge — ${v}`,
      ours: r.surgeGets,
      baseline: ref?.surgeGets,
      unit: 'GETs',
      better: 'lower',
      note: `${load}, ${(SURGE_MS + 1000) / 1000} s; ${r.surgeReads} flash reads issued in the first ${SURGE_MS / 1000} s; baseline: the same variant, ${arrivalsLabel(opts.arrivals)} (4 services)`,
    });
    errorRow(`${label}: read errors — ${v}`, r);
  }

  // the issue's goals, each against clientSideCache in the same run, for the SDK's defaults and
  // with every key tracked by broadcast
  const csc = main.get('node-redis+csc');
  const plain = main.get('node-redis');
  const goal = (v: Variant, metric: string, ours: number, baseline: number | undefined, unit: string, reach?: number) =>
    rows.push({
      ...base,
      metric: `goal: ${metric} — ${v}`,
      ours,
      baseline,
      unit,
      better: 'lower',
      target: reach === undefined ? undefined : { reach },
      note: skip.has(v) ? `${v} skipped: ${skip.get(v)}` : undefined,
    });
  for (const v of HOTKEY) {
    const hk = main.get(v);
    if (main.size > 0) {
      goal(
        v,
        `first-2-s flash GETs, ${arrivalsLabel(opts.arrivals)}, node-redis + hotkey ≤ clientSideCache`,
        hk?.surgeGets ?? NaN,
        csc?.surgeGets,
        'GETs',
        csc?.surgeGets,
      );
      goal(
        v,
        'Redis tracking items, node-redis + hotkey ≤ 1/100 of clientSideCache',
        hk?.trackingItems ?? NaN,
        csc?.trackingItems,
        'items',
        csc ? csc.trackingItems / 100 : undefined,
      );
      goal(
        v,
        'heap after GC per service over plain node-redis, hotkey ≤ 4 MB (baseline: clientSideCache)',
        hk && plain ? (hk.heapPerProcess - plain.heapPerProcess) / MB : NaN,
        csc && plain ? (csc.heapPerProcess - plain.heapPerProcess) / MB : undefined,
        'MB',
        4,
      );
    }
    if (apart.size > 0) {
      const cscApart = apart.get('node-redis+csc');
      goal(
        v,
        `first-2-s flash GETs, ${arrivalsLabel(other)}, node-redis + hotkey ≤ clientSideCache`,
        apart.get(v)?.surgeGets ?? NaN,
        cscApart?.surgeGets,
        'GETs',
        cscApart?.surgeGets,
      );
    }
    if (fleet.size > 0) {
      const cscFleet = fleet.get('node-redis+csc');
      goal(
        v,
        '20 instances: first-2-s flash GETs, node-redis + hotkey ≤ clientSideCache',
        fleet.get(v)?.surgeGets ?? NaN,
        cscFleet?.surgeGets,
        'GETs',
        cscFleet?.surgeGets,
      );
    }
  }

  // the sweep: growth over the sweep, and the cost over plain node-redis at each sample
  const plainSweep = sweeps.get('node-redis');
  const mb = (heaps: number[]) => heaps.map((h) => (h / MB).toFixed(1)).join(' / ');
  for (const v of wanted('sweep', sweepVariants)) {
    const s = sweeps.get(v);
    if (!s) {
      skipped(v, `${sweepKeys} distinct keys read: heap growth after GC`, 'MB');
      continue;
    }
    const growth = (x: Sweep) => (x.heaps.at(-1)! - x.heaps[0]!) / MB;
    const cost = plainSweep && v !== 'node-redis' ? (s.heaps.at(-1)! - plainSweep.heaps.at(-1)!) / MB : undefined;
    rows.push(
      {
        ...base,
        metric: `${sweepKeys} distinct keys read: heap growth after GC — ${v}`,
        ours: growth(s),
        baseline: plainSweep && v !== 'node-redis' ? growth(plainSweep) : undefined,
        unit: 'MB',
        better: 'lower',
        note: `before / after each quarter: ${mb(s.heaps)} MB; ${s.entries} cache entries; ${Math.round(s.readsPerSec)} reads/s${cost === undefined ? '' : `; ${signed(cost)} MB over plain node-redis at the end`}`,
      },
      {
        ...base,
        metric: `${sweepKeys} distinct keys read: read errors — ${v}`,
        ours: s.errors,
        unit: 'read errors',
        better: 'lower',
        target: { reach: 0 },
        note: s.firstError ? `first: ${s.firstError}` : undefined,
      },
    );
  }
  const sdkSweeps: Variant[] = HOTKEY.filter((v) => sweeps.has(v));
  if (sweeps.size > 0 && sdkSweeps.length === 0) sdkSweeps.push('node-redis+hk.get');
  for (const sdkVariant of sdkSweeps) {
    const sdkSweep = sweeps.get(sdkVariant);
    const cscSweep = sweeps.get('node-redis+csc');
    /** heap after GC over plain node-redis's at each of the sweep's samples (before, each quarter) */
    const costs = (x: Sweep | undefined) =>
      x && plainSweep ? x.heaps.map((h, i) => (h - plainSweep.heaps[i]!) / MB) : undefined;
    const sdkCosts = costs(sdkSweep);
    const cscCosts = costs(cscSweep);
    const list = (c: number[]) => c.map(signed).join(' / ');
    goal(
      sdkVariant,
      `heap after GC over plain node-redis during ${sweepKeys} distinct keys, largest of its 5 samples, hotkey ≤ 4 MB (baseline: clientSideCache)`,
      sdkCosts ? Math.max(...sdkCosts) : NaN,
      cscCosts ? Math.max(...cscCosts) : undefined,
      'MB',
      4,
    );
    rows[rows.length - 1]!.note =
      `${sdkVariant === 'node-redis+hk.get' ? `through hk.get by hand (node-redis + hotkey: ${skip.get('node-redis+hotkey') ?? 'not run'})` : 'through the adapter'}` +
      `${sdkCosts ? `; before / each quarter: ${list(sdkCosts)} MB` : ''}${cscCosts ? ` (clientSideCache ${list(cscCosts)})` : ''}`;
    goal(
      sdkVariant,
      `heap after GC over plain node-redis, change from before the ${sweepKeys} keys to after them, hotkey flat (≤ 1 MB; baseline: clientSideCache)`,
      sdkCosts ? sdkCosts.at(-1)! - sdkCosts[0]! : NaN,
      cscCosts ? cscCosts.at(-1)! - cscCosts[0]! : undefined,
      'MB',
      1,
    );
  }

  // where the SDK's heap goes: each step's MBs after GC, in one process
  if (steps) {
    const total = (steps.at(-2)?.heap ?? NaN) - steps[0]!.heap;
    steps.forEach((s, i) =>
      rows.push({
        ...base,
        metric: `heap after GC, step by step: ${s.step}`,
        ours: (i === 0 ? s.heap : s.heap - steps[i - 1]!.heap) / MB,
        unit: 'MB',
        better: 'lower',
        note: `${(s.heap / MB).toFixed(1)} MB in all${i === steps.length - 2 ? `; the SDK's steps together: ${signed(total / MB)} MB` : ''}`,
      }),
    );
  }
  return rows;
});
