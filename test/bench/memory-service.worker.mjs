/**
 * One service process of the memory bench (memory.bench.ts): the heap after full GCs of a
 * service that holds a Redis client, with or without hotkey, idle and after a read sweep over
 * many distinct keys. Plain JavaScript run by plain node (`--expose-gc`, no tsx) on the built
 * packages (sdk/dist), because that is what a service runs: a TypeScript loader would add its
 * own compiled copies and source maps of every module to the heap being measured.
 *
 *   argv: JSON { kind, redisPort, hubUrl?, keys, readsPerKey?, settleMs?, settleAfterMs? }
 *   -> { type: 'memory', kind, fixed, swept, peak, reads, readsPerSecond, extra }
 *      (fixed / swept / peak: { heapUsed, arrayBuffers } in bytes)
 *
 * Reusable: `measureService(service, opts)` takes any service as `{ reads, close, extra? }`, where
 * `reads` are the read paths a sweep alternates between (key i goes through reads[i % n]) and
 * `extra()` adds figures of its own (e.g. cache entries). A new client is one more entry in
 * SERVICES (say 'node-redis', 'node-redis+hotkey', 'node-redis+clientSideCache'), run by
 * `forkWorker(new URL('./memory-service.worker.mjs', import.meta.url), [JSON.stringify(opts)],
 * { tsx: false, execArgv: ['--expose-gc'] })` as memory.bench.ts does.
 */
import { createRequire } from 'node:module';

const gc = globalThis.gc;
const sdkDir = new URL('../../sdk/', import.meta.url);
// the SDK's own copy of ioredis (a dev dependency there), the one its adapter is built against
const requireFromSdk = createRequire(new URL('package.json', sdkDir));

/** @typedef {{ heapUsed: number, arrayBuffers: number }} Heap */
/** @typedef {{ reads: ((key: string) => Promise<unknown>)[], close(): Promise<void>, extra?: () => Record<string, number> }} Service */

/** @returns {Heap} after two full GCs (the second collects what the first one's finalisers freed) */
export function heapAfterGc() {
  if (!gc) throw new Error('run with --expose-gc');
  gc();
  gc();
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, arrayBuffers: m.arrayBuffers };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref?.());

async function ioredis(redisPort) {
  const { Redis } = await import(requireFromSdk.resolve('ioredis'));
  const redis = new Redis({ host: '127.0.0.1', port: redisPort, lazyConnect: true });
  await redis.connect();
  return redis;
}

/** Each entry starts one kind of service; options as in the argv line above. */
export const SERVICES = {
  /** plain ioredis: the baseline */
  async ioredis(o) {
    const redis = await ioredis(o.redisPort);
    return { reads: [(k) => redis.get(k)], close: async () => void redis.disconnect() };
  },
  /** ioredis wrapped by hotkey: reads alternate between hk.get (loader: the wrapped client) and the wrapped client */
  async 'ioredis+hotkey'(o) {
    const redis = await ioredis(o.redisPort);
    const { HotKeyClient } = await import(new URL('dist/index.js', sdkDir).href);
    const { withHotKeys } = await import(new URL('dist/ioredis.js', sdkDir).href);
    const hk = new HotKeyClient({ app: 'bench', hubs: o.hubUrl, instanceId: `memory-${process.pid}` });
    hk.on('error', () => undefined);
    await hk.ready({ signal: AbortSignal.timeout(10_000) });
    const wrapped = withHotKeys(redis, hk);
    return {
      reads: [(k) => hk.get(k, () => wrapped.get(k)), (k) => wrapped.get(k)],
      close: async () => {
        await hk.close();
        redis.disconnect();
      },
      extra: () => {
        const s = hk.stats();
        return { candidates: s.candidates, hotKeys: s.hotKeys, cacheSize: s.cacheSize };
      },
    };
  },
};

/**
 * Heap of `service` idle (after warm-up reads and `settleMs`) and after reading `keys` distinct
 * keys `readsPerKey` times each (256 keys in flight), then `settleAfterMs` for its windows to
 * turn (the SDK's sketch folds back one step a second once the keys stop).
 * @param {Service} service
 * @param {{ keys: number, readsPerKey?: number, settleMs?: number, settleAfterMs?: number }} opts
 */
export async function measureService(service, opts) {
  const readsPerKey = opts.readsPerKey ?? 2;
  const settleMs = opts.settleMs ?? 3000;
  const settleAfterMs = opts.settleAfterMs ?? 12_000;
  const paths = service.reads;
  for (let i = 0; i < 200; i++) await paths[i % paths.length](`warm:${i % 10}`);
  await sleep(settleMs);
  const fixed = heapAfterGc();
  let peak = { ...fixed };
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    if (m.heapUsed + m.arrayBuffers > peak.heapUsed + peak.arrayBuffers)
      peak = { heapUsed: m.heapUsed, arrayBuffers: m.arrayBuffers };
  }, 50);
  const started = performance.now();
  const BATCH = 256;
  let reads = 0;
  for (let base = 0; base < opts.keys; base += BATCH) {
    const batch = [];
    for (let i = base; i < Math.min(opts.keys, base + BATCH); i++) {
      const key = `sweep:${i}`;
      const read = paths[i % paths.length];
      for (let r = 0; r < readsPerKey; r++) batch.push(read(key));
    }
    await Promise.all(batch);
    reads += batch.length;
  }
  const readsPerSecond = (reads * 1000) / (performance.now() - started);
  clearInterval(sampler);
  await sleep(settleAfterMs);
  const swept = heapAfterGc();
  return { fixed, swept, peak, reads, readsPerSecond, extra: service.extra?.() ?? {} };
}

if (process.send !== undefined && process.argv[2] !== undefined) {
  const opts = JSON.parse(process.argv[2]);
  const start = SERVICES[opts.kind];
  if (start === undefined) throw new Error(`unknown service kind ${opts.kind}`);
  const service = await start(opts);
  const result = await measureService(service, opts);
  await service.close().catch(() => undefined);
  process.send({ type: 'memory', kind: opts.kind, ...result }, () => process.exit(0));
}
