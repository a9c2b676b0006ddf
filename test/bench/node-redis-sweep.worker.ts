/**
 * The distinct-key read sweep of the side-by-side benchmark (node-redis.bench.ts), run with
 * --expose-gc: one client variant (redis-clients.ts) reads `keys` never-repeated keys, 1,000 in flight,
 * and the heap after full GCs is sampled before the sweep and after each quarter of it. A cache that
 * keeps every key it read grows with the sweep; a cache that keeps hot keys only stays flat.
 *
 *   <- { type: 'start', variant, redisUrl, hubUrl, keys }
 *   -> { type: 'sweep', heaps: [bytes before, after 1/4, 1/2, 3/4, all], entries, readsPerSec, errors, firstError }
 */
import { fromParent, settledHeapAfterGc, toParent } from './harness.ts';
import { describeError, openClient, type Variant } from './redis-clients.ts';
import { delay } from '../support/wait.ts';

const CONCURRENCY = 1000;
const run = await fromParent<{ variant: Variant; redisUrl: string; hubUrl: string; keys: number }>('start', 60_000);

/** a pause before each sample: replies, socket buffers and timers of the last batch settle first */
const settledHeap = async () => {
  await delay(250);
  return settledHeapAfterGc();
};
const client = await openClient(run.variant, {
  redisUrl: run.redisUrl,
  hubUrl: run.hubUrl,
  app: 'sweep',
  instanceId: `sweep-${run.variant}`,
});
// one warm-up round so that every code path the sweep takes is loaded before the first sample
await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => client.get(`warm:${i}`)));
const heaps = [await settledHeap()];
let errors = 0;
let firstError: string | undefined;
const fail = (err: unknown) => {
  errors++;
  firstError ??= describeError(err);
};
/** reads keys [from, to) with CONCURRENCY reads in flight all along (no batch waits for its slowest) */
const readRange = async (from: number, to: number) => {
  let next = from;
  const lane = async () => {
    while (next < to) await client.get(`sweep:${next++}`).catch(fail);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
};
const started = performance.now();
let sampling = 0;
for (let q = 1; q <= 4; q++) {
  await readRange(Math.floor(((q - 1) * run.keys) / 4), Math.floor((q * run.keys) / 4));
  const t0 = performance.now();
  heaps.push(await settledHeap());
  sampling += performance.now() - t0;
}
const readsPerSec = (run.keys * 1000) / (performance.now() - started - sampling);
toParent({ type: 'sweep', heaps, entries: client.cacheEntries(), readsPerSec, errors, firstError });
await client.close().catch(() => undefined);
process.exit(0);
