/**
 * The consumer programs of test/package/consumers.test.ts, each run with Node in a project
 * outside the workspace against the packed packages: an ES module and a CommonJS service that
 * read a key until the hub promotes it, a node-redis service as sdk/README shows it, and what the
 * TypeScript service (the README's snippet) needs before and after the snippet.
 */
/** A JS consumer body: hammers `key` through hk.get until the hub promotes it (deadline 20 s). */
const HAMMER = `
const deadline = Date.now() + 20_000;
const promoted = new Promise((resolve) => hk.on('promote', (k) => { if (k === KEY) resolve(); }));
let done = false;
promoted.then(() => (done = true));
while (!done) {
  if (Date.now() > deadline) throw new Error(KEY + ' was not promoted within 20 s');
  await hk.get(KEY, async () => 'v');
  await new Promise((r) => setTimeout(r, 2));
}
console.log('PROMOTED ' + KEY);
await hk.close();
`;

export const ESM_SERVICE = `import { HotKeyClient } from '@hotkey/sdk';
import { parseRules } from '@hotkey/sdk/rules';
import { Ownership } from '@hotkey/sdk/ownership';
import { decodeFrame, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';
import { LocalCache } from '@hotkey/sdk/internal';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { metricsText } from '@hotkey/sdk/metrics';
if (typeof parseRules !== 'function' || typeof Ownership !== 'function' || typeof decodeFrame !== 'function' || typeof withHotKeys !== 'function' || typeof LocalCache !== 'function' || PROTOCOL_VERSION < 1) throw new Error('missing exports');
const KEY = 'item:esm';
const hk = new HotKeyClient({ app: 'shop', hubs: [process.env.HOTKEY_HUB], token: process.env.HOTKEY_TOKEN });
await hk.ready({ signal: AbortSignal.timeout(10_000) });
${HAMMER}
if (!/^hotkey_sdk_misses_total\\{app="shop"\\} [1-9]/m.test(metricsText(hk))) throw new Error("metricsText: no misses");`;

export const CJS_SERVICE = `'use strict';
const { HotKeyClient } = require('@hotkey/sdk');
const { withHotKeys } = require('@hotkey/sdk/ioredis');
if (typeof withHotKeys !== 'function') throw new Error('missing withHotKeys');
const KEY = 'item:cjs';
(async () => {
  const hk = new HotKeyClient({ app: 'shop', hubs: [process.env.HOTKEY_HUB], token: process.env.HOTKEY_TOKEN });
  await hk.ready({ signal: AbortSignal.timeout(10_000) });
  ${HAMMER}
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
`;

/**
 * A node-redis service, everything imported from `@hotkey/sdk/node-redis` (as sdk/README shows): the
 * flash key is read through the wrapped client until the hub promotes it,
 * then 200 more reads must leave Redis's GETs of the key (test/package/key-gets.mjs) where they
 * were — retried until the first load after the promotion landed (deadline 20 s).
 */
export const NODE_REDIS_SERVICE = `import { HotKeyClient, withHotKeys } from '@hotkey/sdk/node-redis';
import { createClient } from 'redis';
import { keyGets } from './key-gets.mjs';
const KEY = 'item:nr';
const hk = new HotKeyClient({ app: 'shop', hubs: [process.env.HOTKEY_HUB], token: process.env.HOTKEY_TOKEN });
await hk.ready({ signal: AbortSignal.timeout(10_000) });
const redis = withHotKeys(await createClient({ url: process.env.REDIS_URL }).connect(), hk);
redis.on('error', console.error);
const admin = await createClient({ url: process.env.REDIS_URL }).on('error', console.error).connect();
await admin.set(KEY, 'stock:42');
// GETs of the key alone: the other consumers of the test share this redis-server
const gets = await keyGets(process.env.REDIS_URL, admin);
const deadline = Date.now() + 20_000;
while (!hk.isHot(KEY)) {
  if (Date.now() > deadline) throw new Error(KEY + ' was not promoted within 20 s');
  await redis.get(KEY);
  await new Promise((r) => setTimeout(r, 2));
}
for (;;) {
  const before = await gets.of(KEY);
  for (let i = 0; i < 200; i++) if ((await redis.get(KEY)) !== 'stock:42') throw new Error('wrong value');
  const grew = (await gets.of(KEY)) - before;
  if (grew === 0) break;
  if (Date.now() > deadline) throw new Error(KEY + ' still read from Redis: ' + grew + ' GETs for 200 reads');
}
console.log('SERVED LOCALLY ' + KEY + ': 200 reads, 0 GETs at Redis');
// tracked prefixes (sdk/README): a surge under them costs its first read's GET alone
await admin.set('item:flash:nr', 'sale');
const watched = withHotKeys(await createClient({ url: process.env.REDIS_URL }).connect(), hk, {
  tracking: { prefixes: ['item:flash:'] },
});
watched.on('error', console.error);
// a new probe key each time: one key read every 20 ms surges here itself (two reads in a slice)
// and is answered locally from then on, never read cold again, so never kept
for (let probe = 0; ; probe++) {
  const kept = hk.stats().recentReads;
  await watched.get('item:flash:probe:' + probe);
  if (hk.stats().recentReads > kept) break; // the broadcast session is live: a read under it is kept
  if (Date.now() > deadline) throw new Error('no read kept under the tracked prefix within 20 s');
  await new Promise((r) => setTimeout(r, 20));
}
const gets0 = await gets.of('item:flash:nr');
const holds0 = hk.stats();
if ((await watched.get('item:flash:nr')) !== 'sale') throw new Error('wrong value');
const burst = await Promise.all(Array.from({ length: 50 }, () => watched.get('item:flash:nr')));
if (burst.some((v) => v !== 'sale')) throw new Error('wrong value in the burst');
const surgeGets = (await gets.of('item:flash:nr')) - gets0;
// one GET; one more for each registration the owner hub answered Written or refused (or lost with
// its link): the kept read may not be served then and is loaded again (protocol 3 holders)
const holds1 = hk.stats();
const reloads = holds1.holdsWritten - holds0.holdsWritten + holds1.holdsRefused - holds0.holdsRefused;
if (!hk.isHot('item:flash:nr') || surgeGets !== 1 + reloads)
  throw new Error('item:flash:nr: hot ' + hk.isHot('item:flash:nr') + ', ' + surgeGets + ' GETs, ' + reloads + ' registrations written or refused');
console.log('SURGE UNDER A TRACKED PREFIX item:flash:nr: 51 reads, ' + (surgeGets - reloads) + ' GET at Redis, ' + reloads + ' more for registrations written or refused');
await watched.close();
await redis.close();
gets.close();
await admin.close();
await hk.close();
`;

/** What the README snippet leaves to the service: its logger, database and id. */
export const TS_PRELUDE = `// --- the service's own (not part of the README snippet)
const log = {
  info: (fields: object, msg: string): void => console.log(msg, JSON.stringify(fields)),
  warn: (fields: unknown): void => console.warn(fields),
};
const id = 42;
const db = { items: { find: async (key: string) => ({ key, name: 'a thing' }) } };
// --- the README snippet, verbatim
`;

/** After the snippet: a Redis.Cluster type-checks with withHotKeys; item:42 reaches the hub and is promoted. */
export const TS_EPILOGUE = `
// --- the test's own
const cluster = withHotKeys(new Redis.Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true }), hk);
const clusterGet: (key: string) => Promise<string | null> = cluster.get.bind(cluster);
void clusterGet;
const deadline = Date.now() + 20_000;
// the hub's decision, not isHot(): a local surge makes the key hot here before the hub promotes it
let promoted = false;
hk.on('promote', (key) => {
  if (key === 'item:42') promoted = true;
});
while (!promoted) {
  if (Date.now() > deadline) throw new Error('item:42 was not promoted within 20 s');
  await redis.get('item:42');
  await new Promise((r) => setTimeout(r, 2));
}
console.log('PROMOTED item:42', await redis.get('item:42'));
cluster.disconnect();
redis.disconnect();
await hk.close();
`;
