/**
 * Hot keys read through node-redis's type mapping of bulk strings to Buffers
 * (`withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer })`, a client created with it, a
 * `sendCommand` given it) on a real redis-server and an in-process hub: GET, MGET, HGET and HMGET
 * answered from the cache as Buffers (no read at Redis, counted by INFO commandstats), each reply
 * exactly a plain client's; the one cached entry of a key hands every caller the type it asked
 * for, whichever caller loaded it; a value that is not UTF-8 and HGETALL are Redis's to answer.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/node-redis';
import { hubInProcess } from '../support/e2e.ts';
import { destroyAll, servedLocally } from '../support/node-redis.ts';
import { createClient, nodeRedisVersion, RESP_TYPES } from '../support/node-redis-lib.ts';
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

type Client = ReturnType<typeof createClient>;
const BUFFERS = { [RESP_TYPES.BLOB_STRING]: Buffer };
let server: RedisServer;
let admin: Client;
const opened: Array<{ destroy(): void }> = [];

async function client(options: Parameters<typeof createClient>[0] = {}): Promise<Client> {
  const c = createClient({ url: server.url, ...options });
  c.on('error', () => {});
  opened.push(c);
  await c.connect();
  return c;
}

/** calls of `names` Redis executed so far (INFO commandstats) */
async function callsAtRedis(...names: string[]): Promise<number> {
  const info = await admin.info('commandstats');
  let n = 0;
  for (const name of names) n += Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return n;
}
const readsAtRedis = () => callsAtRedis('get', 'mget', 'hget', 'hmget', 'hgetall');

const promote = (key: string, hk: HotKeyClient) => promoteInProcess(e2e.hub, 'shop', key, [hk]);

test.before(async () => {
  server = await RedisServer.start();
  admin = await client();
});

test.after(async () => {
  destroyAll(opened);
  await delay(20);
  await server?.stop();
});

test(`v${nodeRedisVersion}: a hot GET through withTypeMapping(BLOB_STRING: Buffer) is answered locally, as Redis's bytes`, async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await client(), hk!);
  const bytes = c.withTypeMapping(BUFFERS);
  const plainBytes = admin.withTypeMapping(BUFFERS);
  const key = 'nb:hot';
  await admin.set(key, 'héllo ✓ 🔥');
  await promote(key, hk!);
  await servedLocally(c, key, 'héllo ✓ 🔥', readsAtRedis);
  const expected = await plainBytes.get(key);
  assert.ok(Buffer.isBuffer(expected));
  const before = await readsAtRedis();
  const hits = hk!.stats().hits;
  const got = [];
  for (let i = 0; i < 20; i++) got.push(await bytes.get(key));
  assert.is(await readsAtRedis(), before, '20 Buffer reads of a hot key, none at Redis');
  assert.is(hk!.stats().hits, hits + 20);
  for (const reply of got) assert.equal(form(reply), form(expected));
  got[0]!.fill(0); // a caller's Buffer is its own: changing it changes no other reply
  assert.equal(form(await bytes.get(key)), form(expected));
  assert.is(await c.get(key), 'héllo ✓ 🔥', 'the string reader still gets its string');
  assert.equal(form(await c.sendCommand(['GET', key], { typeMapping: BUFFERS })), form(expected), 'sendCommand');
  assert.is(await readsAtRedis(), before);
});

test(`v${nodeRedisVersion}: one entry per key, every caller its own type, whichever loaded it (tracking on and off)`, async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  for (const tracking of [true, false]) {
    const c = withHotKeys(await client(), hk!, { tracking });
    const bytes = c.withTypeMapping(BUFFERS);
    // a Buffer reader loads the key first; string readers after it, then both at once on a new key
    const first = `nb:first:${tracking}`;
    await admin.set(first, 'v1');
    await promote(first, hk!);
    assert.equal(form(await bytes.get(first)), form(Buffer.from('v1')));
    assert.is(await c.get(first), 'v1');
    await servedLocally(c, first, 'v1', readsAtRedis);
    assert.equal(form(await bytes.get(first)), form(Buffer.from('v1')));

    const mixed = `nb:mixed:${tracking}`;
    await admin.set(mixed, 'v2');
    await promote(mixed, hk!);
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? c.get(mixed) : bytes.get(mixed))));
    replies.forEach((reply, i) => assert.equal(form(reply), form(i % 2 ? 'v2' : Buffer.from('v2')), `read ${i}`));
    await servedLocally(c, mixed, 'v2', readsAtRedis);
    const before = await readsAtRedis();
    assert.equal(form(await bytes.get(mixed)), form(Buffer.from('v2')));
    assert.is(await readsAtRedis(), before, 'served from the entry the string readers use');

    // a write through the adapter: both kinds read the new value
    await c.set(mixed, 'v3');
    assert.equal(form(await bytes.get(mixed)), form(Buffer.from('v3')));
    assert.is(await c.get(mixed), 'v3');
    assert.is(await bytes.get(`nb:missing:${tracking}`), null);
  }
});

test(`v${nodeRedisVersion}: a value that is not UTF-8: the Buffer reader gets Redis's exact bytes from Redis`, async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await client(), hk!);
  const bytes = c.withTypeMapping(BUFFERS);
  const key = 'nb:binary';
  const raw = Buffer.from([0xff, 0xfe, 0x41, 0xc3]);
  await admin.set(key, raw);
  await promote(key, hk!);
  const decoded = await admin.get(key); // what a plain string reader gets (U+FFFD for the bad bytes)
  await servedLocally(c, key, decoded!, readsAtRedis);
  const before = await callsAtRedis('get');
  for (let i = 0; i < 3; i++) assert.equal(form(await bytes.get(key)), form(raw));
  assert.is(await callsAtRedis('get'), before + 3, 'each asked of Redis');
  assert.equal(form(await bytes.mGet([key, 'nb:none'])), form([raw, null]), 'MGET too');
});

test(`v${nodeRedisVersion}: MGET, HGET and HMGET in Buffers answered locally; HGETALL in Buffers by Redis`, async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await client(), hk!);
  const bytes = c.withTypeMapping(BUFFERS);
  const plainBytes = admin.withTypeMapping(BUFFERS);
  await admin.set('nb:m1', 'one');
  await admin.set('nb:m2', 'two');
  await admin.set('nb:cold', 'cold');
  await admin.hSet('nb:h', { a: 'x', b: 'ÿ' });
  for (const key of ['nb:m1', 'nb:m2', 'nb:h']) await promote(key, hk!);
  await servedLocally(c, 'nb:m1', 'one', readsAtRedis);
  await servedLocally(c, 'nb:m2', 'two', readsAtRedis);
  await waitFor('nb:h cached', async () => {
    await c.hGet('nb:h', 'a');
    const before = await readsAtRedis();
    await c.hGet('nb:h', 'a');
    return (await readsAtRedis()) === before;
  });

  const local: [string, (x: Client) => Promise<unknown>][] = [
    ['mGet of hot keys', (x) => x.withTypeMapping(BUFFERS).mGet(['nb:m2', 'nb:m1', 'nb:m2'])],
    ['hGet', (x) => x.withTypeMapping(BUFFERS).hGet('nb:h', 'b')],
    ['hGet of a missing field', (x) => x.withTypeMapping(BUFFERS).hGet('nb:h', 'none')],
    ['hmGet', (x) => x.withTypeMapping(BUFFERS).hmGet('nb:h', ['b', 'none', 'a'])],
  ];
  for (const [name, read] of local) {
    const before = await readsAtRedis();
    const got = await read(c);
    assert.is(await readsAtRedis(), before, `${name}: no read at Redis`);
    assert.equal(form(got), form(await read(admin)), name);
  }
  // the cold key of an MGET in one MGET; the hot ones from the cache
  const mgets = await callsAtRedis('mget');
  const gets = await callsAtRedis('get');
  const mixed = await bytes.mGet(['nb:m1', 'nb:cold', 'nb:m2']);
  assert.equal(form(mixed), form(await plainBytes.mGet(['nb:m1', 'nb:cold', 'nb:m2'])));
  assert.is(await callsAtRedis('mget'), mgets + 2, "one MGET of ours (the cold key), one of the plain client's");
  assert.is(await callsAtRedis('get'), gets);
  // an MGET naming a hot hash: null for it, as MGET says (not GET's WRONGTYPE)
  assert.equal(form(await bytes.mGet(['nb:h', 'nb:m1'])), form(await plainBytes.mGet(['nb:h', 'nb:m1'])));
  assert.equal(form(await c.mGet(['nb:h', 'nb:m1'])), form(await admin.mGet(['nb:h', 'nb:m1'])));

  const hgetalls = await callsAtRedis('hgetall');
  assert.equal(form(await bytes.hGetAll('nb:h')), form(await plainBytes.hGetAll('nb:h')));
  assert.is(await callsAtRedis('hgetall'), hgetalls + 2, 'HGETALL in Buffers: Redis answers');
});

test(`v${nodeRedisVersion}: a client created with Buffers, and a mapping of bulk strings to String`, async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await client({ commandOptions: { typeMapping: BUFFERS } }), hk!);
  const strings = withHotKeys(await client(), hk!);
  const key = 'nb:client';
  await admin.set(key, 'whole');
  await promote(key, hk!);
  await servedLocally(strings, key, 'whole', readsAtRedis);
  const before = await readsAtRedis();
  assert.equal(form(await c.get(key)), form(Buffer.from('whole')));
  assert.equal(form(await c.sendCommand(['GET', key])), form(Buffer.from('whole')), 'its sendCommand');
  assert.equal(form(await c.mGet([key])), form([Buffer.from('whole')]));
  // String (or anything but Buffer) for bulk strings decodes them as strings: the cache's form
  assert.is(await c.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: String }).get(key), 'whole');
  assert.is(await strings.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: String }).get(key), 'whole');
  assert.is(await readsAtRedis(), before, 'all from the cache');
});

test.run();
