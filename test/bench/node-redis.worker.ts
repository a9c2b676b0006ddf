/**
 * One service process of the side-by-side benchmark (node-redis.bench.ts), run with --expose-gc:
 * `instances` service instances of one client variant (redis-clients.ts), each its own client (and
 * its own HotKeyClient where the variant has one), reading a flash key and Zipf-distributed keys and
 * writing Zipf keys at fixed rates shared evenly among them. What reached Redis is counted by the
 * proxy the clients connect through, not here.
 *
 * Arrivals: every 10 ms tick owes the operations its rates call for since the start.
 * - 'tick': the tick issues them in one synchronous job (what a load generator does; it flatters
 *   any batching a client does per job, such as merging concurrent reads of one key).
 * - 'macrotask': the tick issues them one per event-loop turn (a chain of setImmediate, the flash
 *   key's, the Zipf keys' and the writes interleaved), as requests reach a service: each read
 *   starts in its own macrotask, with I/O polled between two of them.
 *
 *   <- { type: 'start', variant, redisUrl, hubUrl, instances, instanceBase, durationMs, flashRate,
 *        zipfRate, writeRate, flashKey, zipfKeys, seed, arrivals }  -> { type: 'ready', heapIdle }
 *   <- { type: 'go', startAt (hostNow ms), surgeMs }
 *   -> { type: 'done', flashReads, surgeReads, reads, skipped, writes, readErrors, flashErrors, writeErrors, firstError,
 *        writeMs, heapAfterGc, cacheEntries }
 *   <- { type: 'stop' }   closes the clients and exits
 */
import { fromParent, heapAfterGc, settledHeapAfterGc, toParent } from './harness.ts';
import { describeError, openClient, type BenchClient, type Variant } from './redis-clients.ts';
import { ZipfSampler } from './zipf.ts';
import { hostNow } from '../support/host-clock.ts';
import { delay } from '../support/wait.ts';

/** operations not yet answered, beyond which a tick skips reads (a stalled Redis cannot pile them up) */
const MAX_IN_FLIGHT = 5000;
const TICK_MS = 10;

export type Arrivals = 'tick' | 'macrotask';

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
  arrivals: Arrivals;
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
let readErrors = 0;
/** of the read errors, the flash key's */
let flashErrors = 0;
let writeErrors = 0;
let firstError: string | undefined;
let next = 0;
let flashReads = 0;
/** flash reads issued in the surge's first 2 s: what the proxy's first-2-s count is out of */
let surgeReads = 0;
let surgeEndsAt = Number.POSITIVE_INFINITY;
let reads = 0;
let skipped = 0;
const fail = (err: unknown, kind: 'read' | 'write') => {
  if (kind === 'read') readErrors++;
  else writeErrors++;
  firstError ??= `${kind}: ${describeError(err)}`;
};
const read = (key: string) => {
  if (inFlight >= MAX_IN_FLIGHT) {
    skipped++;
    return;
  }
  inFlight++;
  reads++;
  if (key === run.flashKey) {
    flashReads++;
    if (hostNow() < surgeEndsAt) surgeReads++;
  }
  clients[next++ % clients.length]!.get(key).then(
    () => inFlight--,
    (err: unknown) => {
      inFlight--;
      if (key === run.flashKey) flashErrors++;
      fail(err, 'read');
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
      fail(err, 'write');
    },
  );
};

/** One tick's operations in the order they arrive: each kind spread evenly over the tick. */
function arrivalsOf(flash: number, zipfReads: number, writesOwed: number): Array<() => void> {
  const ops: Array<{ at: number; op: () => void }> = [];
  for (let i = 0; i < flash; i++) ops.push({ at: (i + 0.5) / flash, op: () => read(run.flashKey) });
  for (let i = 0; i < zipfReads; i++) ops.push({ at: (i + 0.5) / zipfReads, op: () => read(`item:${zipf.next()}`) });
  for (let i = 0; i < writesOwed; i++)
    ops.push({ at: (i + 0.5) / writesOwed, op: () => write(`item:${writeKeys.next()}`) });
  return ops.sort((a, b) => a.at - b.at).map((o) => o.op);
}

/** Runs `ops` one per event-loop turn: a setImmediate queued by an immediate runs in the next turn. */
function oneEachTurn(ops: Array<() => void>): Promise<void> {
  return new Promise((resolve) => {
    let i = 0;
    const step = () => {
      if (i === ops.length) return resolve();
      ops[i++]!();
      setImmediate(step);
    };
    step();
  });
}

const { startAt, surgeMs } = await fromParent<{ startAt: number; surgeMs: number }>('go', 60_000);
surgeEndsAt = startAt + surgeMs;
await delay(Math.max(0, startAt - hostNow()));
let flashDue = 0;
let zipfDue = 0;
let writeDue = 0;
// paced against the clock: a late tick issues what it owes, so the rates hold under load
while (hostNow() - startAt < run.durationMs) {
  const elapsed = hostNow() - startAt;
  const flashOwed = Math.floor((elapsed * run.flashRate) / 1000) - flashDue;
  const zipfOwed = Math.floor((elapsed * run.zipfRate) / 1000) - zipfDue;
  const writeOwed = Math.floor((elapsed * run.writeRate) / 1000) - writeDue;
  flashDue += flashOwed;
  zipfDue += zipfOwed;
  writeDue += writeOwed;
  if (run.arrivals === 'macrotask') await oneEachTurn(arrivalsOf(flashOwed, zipfOwed, writeOwed));
  else {
    for (let i = 0; i < flashOwed; i++) read(run.flashKey);
    for (let i = 0; i < zipfOwed; i++) read(`item:${zipf.next()}`);
    for (let i = 0; i < writeOwed; i++) write(`item:${writeKeys.next()}`);
  }
  await delay(TICK_MS);
}
const drained = hostNow();
while (inFlight > 0 && hostNow() - drained < 5000) await delay(10);
// replies, socket buffers and timers of the last reads settle before the heap is sampled
await delay(250);
toParent({
  type: 'done',
  flashReads,
  surgeReads,
  reads,
  skipped,
  writes,
  readErrors,
  flashErrors,
  writeErrors,
  firstError,
  writeMs,
  heapAfterGc: await settledHeapAfterGc(),
  cacheEntries: clients.reduce((n, c) => n + c.cacheEntries(), 0),
});
await fromParent('stop', 120_000).catch(() => undefined);
await Promise.allSettled(clients.map((c) => c.close()));
process.exit(0);
