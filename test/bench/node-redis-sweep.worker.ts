/**
 * The distinct-key read sweep of the side-by-side benchmark (node-redis.bench.ts), run with
 * --expose-gc: one client variant (redis-clients.ts) reads `keys` never-repeated keys, 1,000 at a time,
 * and the heap after full GCs is sampled before the sweep and after each quarter of it. A cache that
 * keeps every key it read grows with the sweep; a cache that keeps hot keys only stays flat.
 *
 *   <- { type: 'start', variant, redisUrl, hubUrl, keys }
 *   -> { type: 'sweep', heaps: [bytes before, after 1/4, 1/2, 3/4, all], entries, readsPerSec, errors, firstError }
 */
import { fromParent, heapAfterGc, toParent } from './harness.ts';
import { describeError, openClient, type Variant } from './redis-clients.ts';
import { delay } from '../support/wait.ts';

const CONCURRENCY = 1000;
const run = await fromParent<{ variant: Variant; redisUrl: string; hubUrl: string; keys: number }>('start', 60_000);

/** a pause before each sample: replies, socket buffers and timers of the last batch settle first */
const settledHeap = async () => {
  await delay(250);
  return heapAfterGc();
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
const started = performance.now();
const quarter = Math.ceil(run.keys / 4);
for (let from = 0; from < run.keys; from += CONCURRENCY) {
  const batch: Promise<unknown>[] = [];
  for (let i = from; i < Math.min(run.keys, from + CONCURRENCY); i++) batch.push(client.get(`sweep:${i}`).catch(fail));
  await Promise.all(batch);
  const done = Math.min(run.keys, from + CONCURRENCY);
  if (Math.floor(done / quarter) > Math.floor(from / quarter) || done === run.keys) {
    if (heaps.length < 5) heaps.push(await settledHeap());
  }
}
const readsPerSec = (run.keys * 1000) / (performance.now() - started);
toParent({ type: 'sweep', heaps, entries: client.cacheEntries(), readsPerSec, errors, firstError });
await client.close().catch(() => undefined);
process.exit(0);
