/**
 * Hash reads through the node-redis adapter on a real redis-server: HGET, HGETALL and HMGET of a
 * hot key (methods, `sendCommand`, type-mapped proxies) answered from the cache with no read at
 * Redis, each in exactly the reply a plain client of the same node-redis version (5 and 6), RESP
 * (its default, 2, 3) and type mapping gets: same values, same field order, same prototype.
 * Under a type mapping of bulk strings to Buffers, HGET and HMGET answer Buffers from the cache.
 * Where the cache cannot give the reply (a field order an object does not keep, HGETALL in
 * Buffers), Redis answers. Writes, outside writes, the TTL cap, MULTI and WRONGTYPE behave as for a plain client.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as v6 from 'redis';
import * as v5 from 'redis5';
import type { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/node-redis';
import { hubInProcess } from '../support/e2e.ts';
import { destroyAll, servedLocally } from '../support/node-redis.ts';
import { promoteInProcess } from '../support/promote.ts';
import { RedisServer } from '../support/redis-server.ts';
import { form } from '../support/reply-form.ts';
import { delay, waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: { rules: [{ match: '*', threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs: 600_000 }] },
    },
  },
});

type Client = ReturnType<typeof v6.createClient>;
const { MAP, BLOB_STRING } = v6.RESP_TYPES;
const VARIANTS = [
  { version: 5, RESP: undefined },
  { version: 5, RESP: 2 },
  { version: 5, RESP: 3 },
  { version: 6, RESP: undefined },
  { version: 6, RESP: 2 },
  { version: 6, RESP: 3 },
] as const;
type Variant = (typeof VARIANTS)[number];
const label = (v: Variant) => `v${v.version} RESP ${v.RESP ?? 'default'}`;

let server: RedisServer;
let admin: Client;
const opened: Array<{ destroy(): void }> = [];

async function connect(v: Variant, options: object = {}): Promise<Client> {
  const make = (v.version === 5 ? v5.createClient : v6.createClient) as typeof v6.createClient;
  // typed as a default (v6) client whatever its RESP: the replies are compared as data
  const c = make({
    url: server.url,
    ...(v.RESP === undefined ? {} : { RESP: v.RESP }),
    ...options,
  }) as unknown as Client;
  c.on('error', () => {});
  opened.push(c);
  await c.connect();
  return c;
}

/** calls of `names` Redis executed so far (INFO commandstats) */
async function callsAtRedis(names: readonly string[]): Promise<number> {
  const info = await admin.info('commandstats');
  let n = 0;
  for (const name of names) n += Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return n;
}
const hashReadsAtRedis = () => callsAtRedis(['hget', 'hgetall', 'hmget']);

/** Waits until HGET `key` `field` on `c` answers `value` and two more of it reach no Redis. */
async function fieldServedLocally(c: Client, key: string, field: string, value: string): Promise<void> {
  await waitFor(`${key}.${field} served locally as ${value}`, async () => {
    if ((await c.hGet(key, field)) !== value) return false;
    const before = await hashReadsAtRedis();
    const again = [await c.hGet(key, field), await c.hGet(key, field)];
    return again.every((v) => v === value) && (await hashReadsAtRedis()) === before;
  });
}

type Read = [string, (c: Client, key: string) => Promise<unknown>];
const READS: Read[] = [
  ['hGetAll', (c, key) => c.hGetAll(key)],
  ['hGet', (c, key) => c.hGet(key, 'a')],
  ['hGet of a missing field', (c, key) => c.hGet(key, 'none')],
  ['hmGet', (c, key) => c.hmGet(key, ['b', 'none', 'a'])],
  ['sendCommand HGETALL', (c, key) => c.sendCommand(['HGETALL', key])],
  ['sendCommand HGET', (c, key) => c.sendCommand(['HGET', key, 'b'])],
  ['sendCommand HMGET', (c, key) => c.sendCommand(['HMGET', key, 'a', 'b'])],
  ['Map type mapping', (c, key) => c.withTypeMapping({ [MAP]: Map }).hGetAll(key)],
  ['Array type mapping', (c, key) => c.withTypeMapping({ [MAP]: Array }).hGetAll(key)],
  ['Buffer type mapping, hGet', (c, key) => c.withTypeMapping({ [BLOB_STRING]: Buffer }).hGet(key, 'a')],
  ['Buffer type mapping, hmGet', (c, key) => c.withTypeMapping({ [BLOB_STRING]: Buffer }).hmGet(key, ['none', 'b'])],
];

interface Pair {
  variant: Variant;
  wrapped: Client;
  plain: Client;
}

async function pairs(hk: HotKeyClient, options: object = {}): Promise<Pair[]> {
  return Promise.all(
    VARIANTS.map(async (variant) => ({
      variant,
      wrapped: withHotKeys(await connect(variant), hk, options),
      plain: await connect(variant),
    })),
  );
}

/** Runs every read on every wrapped client until a whole round sends no hash read to Redis. */
async function allServedLocally(all: Pair[], key: string, reads: Read[]): Promise<void> {
  await waitFor(
    `every hash read of ${key} served locally`,
    async () => {
      const before = await hashReadsAtRedis();
      for (const { wrapped } of all) for (const [, read] of reads) await read(wrapped, key);
      return (await hashReadsAtRedis()) === before;
    },
    8000,
  );
}

test.before(async () => {
  server = await RedisServer.start();
  admin = await connect({ version: 6, RESP: 2 });
});

test.after(async () => {
  destroyAll(opened);
  await delay(20);
  await server?.stop();
});

test('hot hash reads answered locally, each exactly as a plain client of its version, RESP and mapping', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const all = await pairs(hk!);
  const key = 'nh:shapes';
  // field order b, a, …: a reply that shows order must keep Redis's; `__proto__` is a field like any other
  await admin.hSet(key, [
    ['b', 'two'],
    ['a', 'one'],
    ['c d', 'with space'],
    ['__proto__', 'p'],
    ['é', 'ü'],
  ]);
  await promoteInProcess(e2e.hub, 'shop', key, [hk!]);
  await allServedLocally(all, key, READS);
  const before = await hashReadsAtRedis();
  const local = [];
  for (const { wrapped } of all) for (const [, read] of READS) local.push(form(await read(wrapped, key)));
  assert.is(await hashReadsAtRedis(), before, 'no hash read reached Redis');
  let i = 0;
  for (const { variant, plain } of all)
    for (const [name, read] of READS)
      assert.equal(local[i++], form(await read(plain, key)), `${label(variant)}: ${name}`);
  assert.ok(hk!.stats().hits > 0);
});

test('where the cache cannot give the exact reply, Redis answers it (same reply as a plain client)', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const all = await pairs(hk!);
  const key = 'nh:order';
  // an object lists array-index names first: x, 10, 2 in Redis comes back as 2, 10, x
  await admin.hSet(key, [
    ['x', 'c'],
    ['10', 'a'],
    ['2', 'b'],
  ]);
  await promoteInProcess(e2e.hub, 'shop', key, [hk!]);
  const objectReads: Read[] = [['hGetAll', (c, k) => c.hGetAll(k)]];
  for (const { wrapped } of all) await fieldServedLocally(wrapped, key, 'x', 'c');
  const orderShown: Read[] = [
    ['sendCommand HGETALL', (c, k) => c.sendCommand(['HGETALL', k])],
    ['Map type mapping', (c, k) => c.withTypeMapping({ [MAP]: Map }).hGetAll(k)],
    ['Array type mapping', (c, k) => c.withTypeMapping({ [MAP]: Array }).hGetAll(k)],
    ['Buffer type mapping', (c, k) => c.withTypeMapping({ [BLOB_STRING]: Buffer }).hGetAll(k)],
    ['a Buffer field', (c, k) => c.hGet(k, Buffer.from('x'))],
    // a proxy's own sendCommand, no options: v5 decodes under the client's mapping, v6 the proxy's
    ['a mapped proxy, sendCommand', (c, k) => c.withTypeMapping({ [MAP]: Map }).sendCommand(['HGETALL', k])],
  ];
  for (const { variant, wrapped, plain } of all) {
    const shownByObject = variant.version === 6 ? variant.RESP !== 2 : variant.RESP === 3;
    for (const [name, read] of orderShown) {
      // a RESP3 client's default map is an object: its order is the object's, the cache can give it
      if (name === 'sendCommand HGETALL' && shownByObject) continue;
      const before = await hashReadsAtRedis();
      const got = form(await read(wrapped, key));
      assert.is(await hashReadsAtRedis(), before + 1, `${label(variant)}: ${name} asked of Redis`);
      assert.equal(got, form(await read(plain, key)), `${label(variant)}: ${name}`);
    }
    for (const [name, read] of objectReads)
      assert.equal(form(await read(wrapped, key)), form(await read(plain, key)), name);
  }
});

test('a hot hash: written through the adapter, written outside, expiring, in MULTI, of the wrong type', async () => {
  const [writerHk, readerHk] = await e2e.sdks(2, () => ({ flushIntervalMs: 20 }));
  const variant = VARIANTS[3];
  const writer = withHotKeys(await connect(variant), writerHk!);
  const untracked = withHotKeys(await connect(variant), readerHk!, { tracking: false });
  const tracked = withHotKeys(await connect(variant), writerHk!);
  const key = 'nh:life';
  await admin.hSet(key, 'f', 'v0');
  await promoteInProcess(e2e.hub, 'shop', key, [writerHk!, readerHk!]);
  const hGetLocal = (c: Client, value: string) => fieldServedLocally(c, key, 'f', value);
  await hGetLocal(untracked, 'v0');
  await hGetLocal(tracked, 'v0');

  await writer.hSet(key, 'f', 'v1'); // invalidated cluster-wide before it settles
  assert.is(await untracked.hGet(key, 'f'), 'v1', 'the first read after the write');
  assert.equal({ ...(await untracked.hGetAll(key)) }, { f: 'v1' });

  await hGetLocal(tracked, 'v1');
  await admin.hSet(key, 'f', 'outside');
  await waitFor(
    'the outside write heard through tracking',
    async () => (await tracked.hGet(key, 'f')) === 'outside',
    2000,
  );

  const before = await hashReadsAtRedis();
  const replies = await tracked.multi().hGetAll(key).hGet(key, 'f').exec();
  assert.equal({ ...(replies[0] as object) }, { f: 'outside' });
  assert.is(await hashReadsAtRedis(), before + 2, 'reads in MULTI reach Redis');

  // concurrent first reads of a hot hash not cached yet: one load of it, tracked, for them all
  const burst = 'nh:burst';
  await admin.hSet(burst, { f: 'x', g: 'y' });
  await promoteInProcess(e2e.hub, 'shop', burst, [writerHk!]);
  const loads = await hashReadsAtRedis();
  const got = await Promise.all(
    Array.from({ length: 30 }, (_, i) => (i % 2 ? tracked.hGet(burst, 'f') : tracked.hmGet(burst, ['g', 'f']))),
  );
  assert.is((await hashReadsAtRedis()) - loads, 1, 'one HGETALL for 30 reads');
  got.forEach((v, i) => assert.equal(v, i % 2 ? 'x' : ['y', 'x']));

  const short = 'nh:short';
  await admin.hSet(short, 'f', 'soon gone');
  await admin.pExpire(short, 1500);
  await promoteInProcess(e2e.hub, 'shop', short, [readerHk!]);
  await fieldServedLocally(untracked, short, 'f', 'soon gone'); // cached for 600 s, were it not for the PTTL
  await waitFor(
    'expired in Redis: the read says so',
    async () => Object.keys(await untracked.hGetAll(short)).length === 0,
    3000,
  );
  assert.is(await untracked.hGet(short, 'f'), null);

  const str = 'nh:string';
  await admin.set(str, 'not a hash');
  await promoteInProcess(e2e.hub, 'shop', str, [readerHk!]);
  assert.is(await untracked.get(str), 'not a hash');
  const wrongType = async (c: Client) => (await c.hGetAll(str).catch((e: Error) => e)) as Error;
  const [ours, theirs] = [await wrongType(untracked), await wrongType(admin)];
  assert.instance(ours, Error);
  assert.is(ours.message, theirs.message);
  assert.is(await untracked.hGet(str, 'x').catch((e: Error) => e.message), theirs.message);
});

test("a proxy's own sendCommand of a hot GET: what a plain one gets, though v5 and v6 decode it under different options", async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const key = 'nh:get';
  await admin.set(key, 'bytes');
  await promoteInProcess(e2e.hub, 'shop', key, [hk!]);
  const buffers = { commandOptions: { typeMapping: { [BLOB_STRING]: Buffer } } };
  for (const version of [5, 6] as const) {
    const variant = { version, RESP: undefined };
    const wrapped = withHotKeys(await connect(variant, buffers), hk!);
    const plain = await connect(variant, buffers);
    const strings = withHotKeys(await connect(variant), hk!);
    await servedLocally(strings, key, 'bytes', () => callsAtRedis(['get']));
    const reads: Read[] = [
      ['the client (Buffers)', (c, k) => c.get(k)],
      ['a proxy of strings', (c, k) => c.withTypeMapping({}).get(k)],
      ['its sendCommand', (c, k) => c.withTypeMapping({}).sendCommand(['GET', k])],
    ];
    for (const [name, read] of reads)
      assert.equal(form(await read(wrapped, key)), form(await read(plain, key)), `v${version}: ${name}`);
  }
});

test.run();
