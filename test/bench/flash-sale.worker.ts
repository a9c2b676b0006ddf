/**
 * One service of the flash-sale benchmark (flash-sale.bench.ts): an ioredis client whose
 * `sendCommand` is patched ON THE INSTANCE before `withHotKeys` (the way an APM agent or a
 * service's own metrics count what it sends), reading a flash key and Zipf-distributed other keys
 * at fixed rates, and writes (SET) Zipf items at a fixed rate, as a service's PUT handler does,
 * each timed from its call to its reply (through the wrapper: to its acknowledgement). A patch of `Redis.prototype.sendCommand` counts the flash key's GETs on every
 * connection of the process (the adapter's tracking loads too) per 100 ms bucket since the surge
 * started; the instance patch counts its client's.
 *
 *   <- { type: 'start', redisUrl, hubUrl, durationMs, flashRate, zipfRate, putRate, flashKey, zipfKeys, seed, surgeLocal }
 *   then per phase (plain first, then wrapped: the same client, `withHotKeys` applied between them):
 *   <- { type: 'phase', wrapped }  -> { type: 'ready' }
 *   <- { type: 'go', startAt (hostNow ms) }   after the run   -> { type: 'done', buckets, flashReads, errors, classGets, instanceGets, putMs, putHotMs, putColdMs, putHotRedisMs, putColdRedisMs, putErrors }
 */
import { Redis } from 'ioredis';
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { ZipfSampler } from './zipf.ts';
import { fromParent, toParent } from './harness.ts';
import { hostNow } from '../support/host-clock.ts';
import { delay } from '../support/wait.ts';

const BUCKET_MS = 100;
/** reads of one service not yet answered, beyond which a tick skips (bounded: a stalled Redis cannot pile them up) */
const MAX_IN_FLIGHT = 5000;

const run = await fromParent<{
  redisUrl: string;
  hubUrl: string;
  durationMs: number;
  flashRate: number;
  zipfRate: number;
  /** writes (SET of a Zipf item) per second */
  putRate: number;
  flashKey: string;
  zipfKeys: number;
  seed: number;
  /** the wrapped phase's HotKeyClient `surgeLocal` option */
  surgeLocal: boolean;
}>('start', 60_000);

let startAt = Number.POSITIVE_INFINITY;
const redis = new Redis(run.redisUrl);
let buckets: number[] = [];
/** the flash key's GETs at the class, on every connection of this process (the adapter's own tracking loads too): what Redis was asked */
let classGets = 0;
const atClass = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function (this: Redis, command: { name: string; args: unknown[] }, ...rest: unknown[]) {
  if (command.name === 'get' && String(command.args[0]) === run.flashKey) {
    const at = Math.floor((hostNow() - startAt) / BUCKET_MS);
    if (at >= 0 && at < buckets.length) {
      buckets[at]!++;
      classGets++;
    }
  }
  return (atClass as (...a: unknown[]) => unknown).call(this, command, ...rest);
} as never;
/** the same, counted by the service's own patch on its client */
let instanceGets = 0;
/**
 * The write being issued (set around `redis.set`, which reaches the instance patch in the same
 * job): the patch notes when Redis answered its SET. The patch sits under the wrapper, so that is
 * before the wrapper asks the hub: a wrapped write's time splits into Redis's leg and the hub's.
 */
let issuing: { replyAt: number } | undefined;
const original = redis.sendCommand;
// the instance patch, before withHotKeys (as an APM agent or a service's own metrics do it): it
// must keep seeing every command of this client that reaches Redis, and only those
redis.sendCommand = function (
  this: Redis,
  command: { name: string; args: unknown[]; resolve: (value: unknown) => unknown },
  ...rest: unknown[]
) {
  if (command.name === 'get' && String(command.args[0]) === run.flashKey && hostNow() >= startAt) instanceGets++;
  if (issuing !== undefined && command.name === 'set') {
    const write = issuing;
    const resolve = command.resolve;
    command.resolve = (value) => {
      write.replyAt = hostNow();
      return resolve(value);
    };
  }
  return (original as (...a: unknown[]) => unknown).call(this, command, ...rest);
} as never;
await redis.ping();
let hk: HotKeyClient | undefined;

const zipf = new ZipfSampler({ n: run.zipfKeys, s: 1.1, seed: run.seed });
let inFlight = 0;
let errors = 0;
let firstError: string | undefined;
const read = (key: string) => {
  inFlight++;
  redis.get(key).then(
    () => inFlight--,
    (err: { code?: string; message?: string }) => {
      inFlight--;
      errors++;
      if (errors === 1) firstError = String(err?.code ?? err?.message);
    },
  );
};
/**
 * this phase's writes: ms from the call to the reply, and the ones that failed; `putHotMs` are
 * split into those of keys hot here when written (a local surge: the other services, reading the same Zipf
 * head, likely registered them too, so the write's ack waits for their Applied) and the rest;
 * `put*RedisMs`, in the same order: ms from the call to Redis's reply (the rest is the hub's part)
 */
let putMs: number[] = [];
let putHotMs: number[] = [];
let putColdMs: number[] = [];
let putHotRedisMs: number[] = [];
let putColdRedisMs: number[] = [];
let putErrors = 0;
const value = 'v'.repeat(64);
const put = (key: string) => {
  const hot = hk?.isHot(key) ?? false;
  const write = { replyAt: 0 };
  const t0 = hostNow();
  issuing = write;
  try {
    redis.set(key, value).then(
      () => {
        const ms = hostNow() - t0;
        putMs.push(ms);
        (hot ? putHotMs : putColdMs).push(ms);
        (hot ? putHotRedisMs : putColdRedisMs).push(write.replyAt > 0 ? write.replyAt - t0 : ms);
      },
      () => void putErrors++,
    );
  } finally {
    issuing = undefined;
  }
};
for (let phase = 0; phase < 2; phase++) {
  const { wrapped } = await fromParent<{ wrapped: boolean }>('phase', 60_000);
  if (wrapped && hk === undefined) {
    hk = new HotKeyClient({ app: 'bench', hubs: run.hubUrl, flushIntervalMs: 50, surgeLocal: run.surgeLocal });
    await hk.ready({ signal: AbortSignal.timeout(10_000) });
    withHotKeys(redis, hk);
    // a running service has read before the surge: its tracking connections are open (they open
    // at the first read); the parent waits until every service's are up before it starts
    await redis.get('item:warmup');
  }
  buckets = new Array<number>(Math.ceil(run.durationMs / BUCKET_MS) + 1).fill(0);
  errors = 0;
  classGets = 0;
  instanceGets = 0;
  putMs = [];
  putHotMs = [];
  putColdMs = [];
  putHotRedisMs = [];
  putColdRedisMs = [];
  putErrors = 0;
  let flashReads = 0;
  toParent({ type: 'ready' });
  startAt = (await fromParent<{ startAt: number }>('go', 60_000)).startAt;
  await delay(Math.max(0, startAt - hostNow()));
  const TICK_MS = 10;
  let flashDue = 0;
  let zipfDue = 0;
  let putDue = 0;
  // paced against the clock: a late tick issues what it owes, so the rates hold under load
  while (hostNow() - startAt < run.durationMs) {
    const elapsed = hostNow() - startAt;
    const flashOwed = Math.floor((elapsed * run.flashRate) / 1000) - flashDue;
    const zipfOwed = Math.floor((elapsed * run.zipfRate) / 1000) - zipfDue;
    for (let i = 0; i < flashOwed && inFlight < MAX_IN_FLIGHT; i++) {
      read(run.flashKey);
      flashReads++;
    }
    for (let i = 0; i < zipfOwed && inFlight < MAX_IN_FLIGHT; i++) read(`item:${zipf.next()}`);
    const putOwed = Math.floor((elapsed * run.putRate) / 1000) - putDue;
    // each write in a job of its own, as a PUT handler runs in its request's own callback: issued
    // in this loop's job, a wrapped write would first send the reads this job held (held-reads.ts),
    // which a service's other requests hold and send in their own jobs
    for (let i = 0; i < putOwed; i++) setImmediate(put, `item:${zipf.next()}`);
    flashDue += flashOwed;
    zipfDue += zipfOwed;
    putDue += putOwed;
    await delay(TICK_MS);
  }
  const drained = hostNow();
  while (inFlight > 0 && hostNow() - drained < 5000) await delay(10);
  while (putMs.length + putErrors < putDue && hostNow() - drained < 5000) await delay(10);
  toParent({
    type: 'done',
    buckets,
    flashReads,
    errors,
    firstError,
    classGets,
    instanceGets,
    putMs,
    putHotMs,
    putColdMs,
    putHotRedisMs,
    putColdRedisMs,
    putErrors,
  });
}
redis.disconnect();
await hk?.close();
process.exit(0);
