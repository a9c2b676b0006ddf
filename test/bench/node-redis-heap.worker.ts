/**
 * Where the SDK's heap goes in a node-redis service (node-redis.bench.ts, part `heap`), run with
 * --expose-gc and the SDK from its build: one process takes the steps a service takes, from a
 * plain node-redis client to a wrapped one serving a hot key, and samples the heap after full GCs
 * after each step, so that each step's MBs are measured apart:
 *
 *   plain node-redis, warm → + the `ws` and msgpackr modules (the SDK's libraries, loaded first to
 *   be measured apart) → + `@hotkey/sdk/node-redis` (its own modules: HotKeyClient and the adapter;
 *   a node-redis service never loads the root entry, which also re-exports the ioredis adapter) →
 *   + a HotKeyClient connected to the hub → + withHotKeys and its tracking connections (two
 *   node-redis clients of its own per node) → + the flash key hot and cached → + 100k distinct
 *   cold reads (counting state, and the code they make hot) → for scale: one more plain
 *   node-redis client.
 *
 *   <- { type: 'start', redisUrl, hubUrl, flashKey, coldReads }
 *   -> { type: 'stages', stages: [{ step, heap (bytes) }] }
 */
import { fromParent, settledHeapAfterGc, toParent } from './harness.ts';
import { delay, waitFor } from '../support/wait.ts';

const run = await fromParent<{ redisUrl: string; hubUrl: string; flashKey: string; coldReads: number }>(
  'start',
  60_000,
);
const stages: Array<{ step: string; heap: number }> = [];
/** a pause before each sample: replies, socket buffers and timers of the last step settle first */
const sample = async (step: string) => {
  await delay(250);
  stages.push({ step, heap: await settledHeapAfterGc() });
};
const reads = async (get: (key: string) => Promise<unknown>, keys: (i: number) => string, n: number) => {
  for (let from = 0; from < n; from += 1000) {
    const batch: Promise<unknown>[] = [];
    for (let i = from; i < Math.min(n, from + 1000); i++) batch.push(get(keys(i)));
    await Promise.all(batch);
  }
};

const { createClient } = await import('redis');
/** a plain node-redis client, connected, with every code path of a GET loaded and warm */
const warmClient = async () => {
  const c = createClient({ url: run.redisUrl });
  c.on('error', () => undefined);
  await c.connect();
  await reads(
    (k) => c.get(k),
    (i) => `item:${i}`,
    2000,
  );
  return c;
};
const client = await warmClient();
await sample('plain node-redis client, warm');

// the libraries first, so that the SDK's own modules are measured apart from them (the test
// package depends on the same versions: one copy of each in the workspace)
await import('ws');
await import('msgpackr/pack');
await sample('+ ws and msgpackr modules (the SDK loads them)');
const { HotKeyClient, withHotKeys } = await import('@hotkey/sdk/node-redis');
await sample('+ @hotkey/sdk/node-redis modules');

const hk = new HotKeyClient({ app: 'bench', hubs: run.hubUrl, instanceId: 'heap-steps' });
hk.on('error', () => undefined);
await hk.ready({ signal: AbortSignal.timeout(15_000) });
await sample('+ a HotKeyClient connected to the hub');

const wrapped = withHotKeys(client, hk);
await reads(
  (k) => wrapped.get(k),
  (i) => `item:${i}`,
  2000,
);
// the tracking connections open on the first reads: both named by the adapter
const names = async () => String(await wrapped.sendCommand(['CLIENT', 'LIST']));
await waitFor(
  'the adapter tracking connections',
  async () => {
    const list = await names();
    return list.includes('name=hotkey-tracking') && list.includes('name=hotkey-invalidations');
  },
  10_000,
  50,
);
await sample('+ withHotKeys: hooks and tracking connections');

// the hub promotes the flash key (600 reads/s); its value is then cached and served locally
await waitFor(
  'the flash key hot and cached',
  async () => {
    await reads(
      (k) => wrapped.get(k),
      () => run.flashKey,
      200,
    );
    return hk.isHot(run.flashKey) && hk.stats().cacheSize > 0;
  },
  15_000,
);
await sample('+ the flash key hot and cached');

await reads(
  (k) => wrapped.get(k),
  (i) => `cold:${i}`,
  run.coldReads,
);
await sample(`+ ${run.coldReads / 1000}k distinct cold reads`);

const other = await warmClient();
await sample('for scale: + one more plain node-redis client, warm');

toParent({ type: 'stages', stages });
other.destroy();
client.destroy();
await hk.close().catch(() => undefined);
process.exit(0);
