// The adapters' end-to-end checks as a service outside the workspace runs them: copied into a
// consumer project of test/package/consumers.test.ts and run there with Node, against the packed
// @hotkey/sdk and the client library LIB (ioredis, iovalkey or redis) that project installed.
//
//   LIB=iovalkey HOTKEY_HUB=ws://… HOTKEY_TOKEN=… REDIS_URL=redis://… KEY=item:check:iovalkey node adapter-check.mjs
//
// Two instances (a HotKeyClient and a wrapped client each; the second without tracking, so it
// hears writes through the hub alone) read KEY until the hub promotes it, then:
//   hot      200 reads on each instance send no GET of KEY to Redis (counted with MONITOR)
//   write    a SET through the first instance's wrapper: the second's first read after it is new
//   outside  a SET by the plain client: the first instance drops its copy through Redis tracking
// Prints one line per check and exits 0, or throws. Every wait has a deadline.
import { readFileSync } from 'node:fs';
import { HotKeyClient } from '@hotkey/sdk';
import { keyGets } from './key-gets.mjs';

const { LIB, HOTKEY_HUB, HOTKEY_TOKEN, REDIS_URL, KEY } = process.env;
if (!['ioredis', 'iovalkey', 'redis'].includes(LIB) || !HOTKEY_HUB || !REDIS_URL || !KEY)
  throw new TypeError('LIB (ioredis, iovalkey or redis), HOTKEY_HUB, REDIS_URL and KEY are required');
const nodeRedis = LIB === 'redis';
const imported = await import(LIB);
const lib = imported.Redis || imported.createClient ? imported : imported.default;
const { withHotKeys } = await import(nodeRedis ? '@hotkey/sdk/node-redis' : '@hotkey/sdk/ioredis');
const version = JSON.parse(readFileSync(`node_modules/${LIB}/package.json`, 'utf8')).version;
const deadline = Date.now() + 20_000;
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const overdue = (what) => {
  if (Date.now() > deadline) throw new Error(`${LIB} ${version}: ${what} within 20 s`);
};

const opened = [];
async function connect() {
  if (nodeRedis) {
    const c = lib.createClient({ url: REDIS_URL });
    c.on('error', console.error);
    await c.connect();
    opened.push(() => c.destroy());
    return c;
  }
  const c = new lib.Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  await c.info('server');
  opened.push(() => c.disconnect());
  return c;
}

const instance = async (tracking) => {
  const hk = new HotKeyClient({ app: 'shop', hubs: [HOTKEY_HUB], token: HOTKEY_TOKEN, flushIntervalMs: 20 });
  await hk.ready({ signal: AbortSignal.timeout(10_000) });
  let promoted = false;
  hk.on('promote', (key) => {
    if (key === KEY) promoted = true;
  });
  return { hk, redis: withHotKeys(await connect(), hk, { tracking }), promoted: () => promoted };
};

const plain = await connect();
const gets = await keyGets(REDIS_URL, plain);

/** Reads KEY on `at` until 200 reads answer `value` with no GET reaching Redis. */
async function servedLocally(at, value) {
  for (;;) {
    const before = await gets.of(KEY);
    for (let i = 0; i < 200; i++) {
      const got = await at.redis.get(KEY);
      if (got !== value) throw new Error(`${LIB} ${version}: read ${got}, expected ${value}`);
    }
    if ((await gets.of(KEY)) === before) return;
    overdue(`${KEY} served locally as ${value}`);
    await pause(20);
  }
}

const a = await instance(true);
const b = await instance(false);
await plain.set(KEY, 'v1');
while (!a.promoted() || !b.promoted()) {
  overdue(`${KEY} promoted`);
  await Promise.all([a.redis.get(KEY), b.redis.get(KEY)]);
  await pause(2);
}
await servedLocally(a, 'v1');
await servedLocally(b, 'v1');
console.log(`HOT READS LOCAL ${LIB} ${version}`);

await a.redis.set(KEY, 'v2');
const seen = await b.redis.get(KEY);
if (seen !== 'v2') throw new Error(`${LIB} ${version}: the other instance read ${seen} right after the write`);
await servedLocally(b, 'v2');
console.log(`WRITE SEEN AT ONCE ${LIB} ${version}`);

await servedLocally(a, 'v2');
await plain.set(KEY, 'v3');
const wrote = Date.now();
while ((await a.redis.get(KEY)) !== 'v3') {
  if (Date.now() - wrote > 2000) throw new Error(`${LIB} ${version}: the outside write not seen within 2 s`);
  await pause(5);
}
console.log(`OUTSIDE WRITE DROPPED ${LIB} ${version}`);

gets.close();
for (const close of opened) close();
await Promise.all([a.hk.close(), b.hk.close()]);
