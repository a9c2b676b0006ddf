/**
 * One service process of the side-by-side benchmark (node-redis.bench.ts), run with --expose-gc:
 * `instances` service instances of one client variant (redis-clients.ts), each its own client (and
 * its own HotKeyClient where the variant has one), reading a flash key and Zipf-distributed keys and
 * writing Zipf keys at fixed rates shared evenly among them. What reached Redis is counted by the
 * proxy the clients connect through, not here.
 *
 *   <- { type: 'start', variant, redisUrl, hubUrl, instances, instanceBase, durationMs, flashRate,
 *        zipfRate, writeRate, flashKey, zipfKeys, seed }           -> { type: 'ready', heapIdle }
 *   <- { type: 'go', startAt (hostNow ms) }
 *   -> { type: 'done', flashReads, reads, writes, errors, firstError, writeMs, heapAfterGc, cacheEntries }
 *   <- { type: 'stop' }   closes the clients and exits
 */
import { fromParent, heapAfterGc, toParent } from './harness.ts';
import { openClient, type BenchClient, type Variant } from './redis-clients.ts';
import { ZipfSampler } from './zipf.ts';
import { hostNow } from '../support/host-clock.ts';
import { delay } from '../support/wait.ts';

/** reads not yet answered, beyond which a tick skips (a stalled Redis cannot pile them up) */
const MAX_IN_FLIGHT = 5000;
const TICK_MS = 10;

const run = await fromParent<{
  variant: Variant;
  redisUrl: string;
  hubUrl: string;
  instances: number;
  instanceBase: number;
  durationMs: number;
  flashRate: number;
  zipfRate: number;
  writeRate: number;
  flashKey: string;
  zipfKeys: number;
  seed: number;
}>('start', 60_000);

const clients: BenchClient[] = [];
for (let i = 0; i < run.instances; i++)
  clients.push(
    await openClient(run.variant, {
      redisUrl: run.redisUrl,
      hubUrl: run.hubUrl,
      app: 'bench',
      instanceId: `svc-${run.instanceBase + i}`,
    }),
  );
const zipf = new ZipfSampler({ n: run.zipfKeys, s: 1.1, seed: run.seed });
const writeKeys = new ZipfSampler({ n: run.zipfKeys, s: 1.1, seed: run.seed + 1000 });
toParent({ type: 'ready', heapIdle: heapAfterGc() });

let inFlight = 0;
let errors = 0;
let firstError: string | undefined;
let next = 0;
const fail = (err: unknown) => {
  errors++;
  if (errors === 1) firstError = String((err as Error)?.message || (err as Error)?.name || err);
};
const read = (key: string) => {
  inFlight++;
  clients[next++ % clients.length]!.get(key).then(
    () => inFlight--,
    (err: unknown) => {
      inFlight--;
      fail(err);
    },
  );
};
const writeMs: number[] = [];
let writes = 0;
const write = (key: string) => {
  inFlight++;
  writes++;
  const t0 = hostNow();
  clients[writes % clients.length]!.set(key, `v${writes}`).then(
    () => {
      inFlight--;
      writeMs.push(hostNow() - t0);
    },
    (err: unknown) => {
      inFlight--;
      fail(err);
    },
  );
};

const { startAt } = await fromParent<{ startAt: number }>('go', 60_000);
await delay(Math.max(0, startAt - hostNow()));
let flashReads = 0;
let reads = 0;
let flashDue = 0;
let zipfDue = 0;
let writeDue = 0;
// paced against the clock: a late tick issues what it owes, so the rates hold under load
while (hostNow() - startAt < run.durationMs) {
  const elapsed = hostNow() - startAt;
  const flashOwed = Math.floor((elapsed * run.flashRate) / 1000) - flashDue;
  const zipfOwed = Math.floor((elapsed * run.zipfRate) / 1000) - zipfDue;
  const writeOwed = Math.floor((elapsed * run.writeRate) / 1000) - writeDue;
  for (let i = 0; i < flashOwed && inFlight < MAX_IN_FLIGHT; i++) {
    read(run.flashKey);
    flashReads++;
  }
  for (let i = 0; i < zipfOwed && inFlight < MAX_IN_FLIGHT; i++) read(`item:${zipf.next()}`);
  for (let i = 0; i < writeOwed; i++) write(`item:${writeKeys.next()}`);
  reads += flashOwed + zipfOwed;
  flashDue += flashOwed;
  zipfDue += zipfOwed;
  writeDue += writeOwed;
  await delay(TICK_MS);
}
const drained = hostNow();
while (inFlight > 0 && hostNow() - drained < 5000) await delay(10);
// replies, socket buffers and timers of the last reads settle before the heap is sampled
await delay(250);
toParent({
  type: 'done',
  flashReads,
  reads,
  writes,
  errors,
  firstError,
  writeMs,
  heapAfterGc: heapAfterGc(),
  cacheEntries: clients.reduce((n, c) => n + c.cacheEntries(), 0),
});
await fromParent('stop', 120_000).catch(() => undefined);
await Promise.allSettled(clients.map((c) => c.close()));
process.exit(0);
