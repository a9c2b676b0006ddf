/**
 * What the side-by-side benchmark (node-redis.bench.ts) runs: one load scenario or one key sweep
 * of one client variant, each on a fresh redis-server and a fresh hub, and the SDK build the
 * service processes load.
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
import { forkWorker, percentile, type Worker } from './harness.ts';
import type { Variant } from './redis-clients.ts';
import type { Arrivals } from './node-redis.worker.ts';

export type { Arrivals } from './node-redis.worker.ts';

export const FLASH_RATE = 6000;
export const ZIPF_RATE = 2000;
export const WRITE_RATE = 20;
export const ZIPF_KEYS = 100_000;
export const FLASH_KEY = 'item:flash:1001';
export const SURGE_MS = 2000;
const BUCKET_MS = 100;
/** the flash key crosses the threshold within ~1/10 s of the surge; the Zipf head (~270/s) stays under it */
const RULES = [{ match: '*', threshold: 600, windowMs: 1000, hotMs: 60_000, cacheTtlMs: 30_000 }];
/** tsx without the source condition: `@hotkey/sdk` resolves to its build, as in a service */
const SERVICE_PROCESS = { tsx: false, execArgv: ['--import', 'tsx', '--expose-gc'] };

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
export function freshSdkBuild(): string {
  return freshBuild('sdk');
}

/** Builds a workspace package (`sdk`, `hub`) when its build is missing or older than its sources. */
export function freshBuild(pkg: 'sdk' | 'hub'): string {
  const dir = fileURLToPath(new URL(`../../${pkg}/`, import.meta.url));
  const entry = pkg === 'sdk' ? 'index.js' : 'cli.js';
  let built = 0;
  try {
    built = statSync(join(dir, 'dist', entry)).mtimeMs;
  } catch {
    // no build yet
  }
  if (built >= newest(join(dir, 'src'), (n) => n.endsWith('.ts') && !n.endsWith('.test.ts')))
    return `${pkg}/dist current`;
  execFileSync('pnpm', ['--filter', `@hotkey/${pkg}`, 'run', 'build'], {
    cwd: dir,
    stdio: 'inherit',
    timeout: 180_000,
  });
  return `${pkg}/dist rebuilt`;
}

/** What the services did, summed over them: the load issued and what failed. */
interface Issued {
  flashReads: number;
  /** flash reads the services issued in the first 2 s (the proxy counts what reached it in that time) */
  surgeReads: number;
  reads: number;
  /** reads the load owed but did not issue: MAX_IN_FLIGHT of the worker reached */
  skipped: number;
  writes: number;
  readErrors: number;
  /** of the read errors, the flash key's */
  flashErrors: number;
  writeErrors: number;
  firstError?: string;
}
interface Done extends Issued {
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
export interface Result extends Issued {
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

export interface ScenarioOptions {
  processes: number;
  instances: number;
  durationMs: number;
  arrivals: Arrivals;
}

/** The load on `processes` service processes of `instances` instances each, counted at the proxy. */
export async function scenario(variant: Variant, opts: ScenarioOptions): Promise<Result> {
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
          arrivals: opts.arrivals,
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
      for (const w of workers) w.send({ type: 'go', startAt, surgeMs: SURGE_MS });
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
      const sum = (f: (d: Done) => number) => done.reduce((a, d) => a + f(d), 0);
      return {
        surgeGets,
        steadyPerSec:
          seconds > SURGE_MS / 1000
            ? (counts.flashBuckets.reduce((a, n) => a + n, 0) - surgeGets) / (seconds - SURGE_MS / 1000)
            : NaN,
        getsPerSec: counts.gets / seconds,
        heapPerProcess: sum((d) => d.heapAfterGc) / done.length,
        trackingItems,
        pushesPerSec: counts.pushes / seconds,
        writeP50: percentile(writeMs, 50, true),
        writeP99: percentile(writeMs, 99, true),
        entriesPerInstance: sum((d) => d.cacheEntries) / (opts.processes * opts.instances),
        flashReads: sum((d) => d.flashReads),
        surgeReads: sum((d) => d.surgeReads),
        reads: sum((d) => d.reads),
        skipped: sum((d) => d.skipped),
        writes: sum((d) => d.writes),
        readErrors: sum((d) => d.readErrors),
        flashErrors: sum((d) => d.flashErrors),
        writeErrors: sum((d) => d.writeErrors),
        firstError: done.find((d) => d.firstError !== undefined)?.firstError,
      };
    } finally {
      await Promise.all(workers.map((w) => w.kill()));
    }
  });
}

export interface Sweep {
  heaps: number[];
  entries: number;
  readsPerSec: number;
  errors: number;
  firstError?: string;
}

/** The distinct-key sweep of one variant (node-redis-sweep.worker.ts), straight to Redis. */
export async function sweep(variant: Variant, keys: number): Promise<Sweep> {
  // nothing to count, and the proxy's hop would only slow the sweep
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

/** The heap after GC after each step from a plain node-redis client to a wrapped one (node-redis-heap.worker.ts). */
export async function heapSteps(coldReads: number): Promise<Array<{ step: string; heap: number }>> {
  return withStack(true, async ({ redisUrl, hubUrl, admin }) => {
    await admin.set(FLASH_KEY, 'stock:42');
    const w = forkWorker(new URL('./node-redis-heap.worker.ts', import.meta.url), [], SERVICE_PROCESS);
    try {
      w.send({ type: 'start', redisUrl, hubUrl, flashKey: FLASH_KEY, coldReads });
      return (await w.waitFor<{ stages: Array<{ step: string; heap: number }> }>('stages', 120_000)).stages;
    } finally {
      await w.kill();
    }
  });
}
