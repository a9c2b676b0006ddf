/**
 * The node-redis adapter (`@hotkey/sdk/node-redis`) on a real redis-server: hot GETs answered
 * locally (counted at Redis with INFO commandstats), every write path invalidating before it
 * settles (methods, sendCommand, multi().exec(), execAsPipeline, scripts, duplicate, a pool),
 * outside writes heard through tracking, the TTL capped by PTTL, key identity by database.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient, createClientPool } from '../support/node-redis-lib.ts';
import type { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/node-redis';
import { hubInProcess } from '../support/e2e.ts';
import { promoteInProcess } from '../support/promote.ts';
import { RedisServer } from '../support/redis-server.ts';
import { destroyAll, servedLocally } from '../support/node-redis.ts';
import { delay, waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: {
        rules: [
          { match: 'nrl:*', threshold: 1_000_000, limit: 200, hotMs: 600_000, cacheTtlMs: 600_000 },
          { match: '*', threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs: 600_000 },
        ],
      },
    },
  },
});

type Client = ReturnType<typeof createClient>;
let server: RedisServer;
const opened: Array<{ destroy(): void }> = [];
let plain: Client;

async function client(options: Parameters<typeof createClient>[0] = {}): Promise<Client> {
  const c = createClient({ url: server.url, ...options });
  c.on('error', () => {});
  opened.push(c);
  await c.connect();
  return c;
}

/** calls of `command` Redis executed so far (INFO commandstats) */
async function callsAtRedis(command: string): Promise<number> {
  const info = await plain.info('commandstats');
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
}
const getsAtRedis = () => callsAtRedis('get');

const promote = (key: string, on: readonly HotKeyClient[]) => promoteInProcess(e2e.hub, 'shop', key, on);

test.before(async () => {
  server = await RedisServer.start();
  plain = await client();
});

test.after(async () => {
  destroyAll(opened);
  await delay(20);
  await server?.stop();
});

test('a hot GET is answered locally: Redis sees no GET of it after the first load', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await client(), hk!);
  await plain.set('nr:hot', 'v1');
  assert.is(await c.get('nr:hot'), 'v1', 'cold: from Redis');
  await promote('nr:hot', [hk!]);
  await servedLocally(c, 'nr:hot', 'v1', getsAtRedis);
  const before = await getsAtRedis();
  for (let i = 0; i < 50; i++) assert.is(await c.get('nr:hot'), 'v1');
  assert.is(await getsAtRedis(), before, '50 hot reads, no GET at Redis');
  assert.is(await c.get('nr:cold'), null, 'a cold key still reads Redis');
  assert.is(await getsAtRedis(), before + 1);
});

test('every write path invalidates before it settles: another instance reads the new value at once', async () => {
  const [writerHk, readerHk] = await e2e.sdks(2, () => ({ flushIntervalMs: 20 }));
  const writer = withHotKeys(await client(), writerHk!);
  // the reader hears writes only through the hub: no tracking of its own
  const reader = withHotKeys(await client(), readerHk!, { tracking: false });
  const key = 'nr:paths';
  await plain.set(key, 'v0');
  await promote(key, [writerHk!, readerHk!]);
  await servedLocally(reader, key, 'v0', getsAtRedis);
  const pool = withHotKeys(createClientPool({ url: server.url }), writerHk!);
  opened.push(pool);
  await pool.connect();
  const dup = writer.duplicate();
  dup.on('error', () => {});
  opened.push(dup);
  await dup.connect();
  const paths: Array<[string, (value: string) => Promise<unknown>]> = [
    ['set()', (v) => writer.set(key, v)],
    ['sendCommand', (v) => writer.sendCommand(['SET', key, v])],
    ['multi().exec()', (v) => writer.multi().set(key, v).get(key).exec()],
    ['execAsPipeline', (v) => writer.multi().set(key, v).execAsPipeline()],
    ['eval', (v) => writer.eval("return redis.call('SET', KEYS[1], ARGV[1])", { keys: [key], arguments: [v] })],
    ['duplicate()', (v) => dup.set(key, v)],
    ['pool', (v) => pool.set(key, v)],
    ['pool multi', (v) => pool.multi().set(key, v).exec()],
    [
      'raw MULTI … EXEC',
      async (v) => {
        const own = writer.duplicate();
        own.on('error', () => {});
        opened.push(own);
        await own.connect();
        // MULTI, queued commands and EXEC sent one by one through sendCommand (node-redis queues them in order)
        const [, queued, exec] = await Promise.all([
          own.sendCommand(['MULTI']),
          own.sendCommand(['SET', key, v]),
          own.sendCommand(['EXEC']),
        ]);
        assert.is(queued, 'QUEUED');
        return exec;
      },
    ],
  ];
  for (const [name, write] of paths) {
    const value = `after ${name}`;
    await write(value);
    assert.is(await reader.get(key), value, `${name}: the reader's first read after the write`);
    await servedLocally(reader, key, value, getsAtRedis);
  }
});

test('an outside write (a plain node-redis client) drops the hot value through tracking', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await client(), hk!);
  const key = 'nr:outside';
  await plain.set(key, 'a');
  await promote(key, [hk!]);
  await servedLocally(c, key, 'a', getsAtRedis);
  await plain.set(key, 'b');
  await waitFor('the outside write is seen', async () => (await c.get(key)) === 'b', 2000);
  await servedLocally(c, key, 'b', getsAtRedis);
  await plain.flushDb();
  await waitFor('FLUSHDB is seen', async () => (await c.get(key)) === null, 2000);
});

test('a cached value does not outlive its Redis TTL (capped by PTTL)', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await client(), hk!, { tracking: false });
  const key = 'nr:ttl';
  await plain.set(key, 'short', { PX: 400 });
  await promote(key, [hk!]);
  await servedLocally(c, key, 'short', getsAtRedis);
  await waitFor('expired in Redis: the read says so', async () => (await c.get(key)) === null, 3000);
  assert.is(await plain.exists(key), 0);
});

test('key identity: one key in two databases, two wrapped clients of one hk, never mixed', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const db0 = withHotKeys(await client(), hk!);
  const db1 = withHotKeys(await client({ database: 1 }), hk!);
  const key = 'nr:identity';
  await db0.set(key, 'zero');
  await db1.set(key, 'one');
  await promote(key, [hk!]);
  await servedLocally(db0, key, 'zero', getsAtRedis);
  // hk holds one entry per key, tagged with its namespace: db 1's client never takes db 0's
  for (let i = 0; i < 5; i++) assert.is(await db1.get(key), 'one');
  assert.is(await db0.get(key), 'zero');
  // SELECT moves a client: its reads follow the database
  await db0.select(1);
  assert.is(await db0.get(key), 'one');
  await db0.select(0);
  assert.is(await db0.get(key), 'zero');
});

test('MGET: the hot keys answered locally, only the others sent, in one MGET, replies in order', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await client(), hk!, { tracking: false });
  await plain.mSet({ 'nr:m1': 'one', 'nr:m2': 'two', 'nr:m3': 'three' });
  await promote('nr:m1', [hk!]);
  await promote('nr:m3', [hk!]);
  await servedLocally(c, 'nr:m1', 'one', getsAtRedis);
  await servedLocally(c, 'nr:m3', 'three', getsAtRedis);
  const [gets, mgets] = [await getsAtRedis(), await callsAtRedis('mget')];
  for (let i = 0; i < 10; i++)
    assert.equal(await c.mGet(['nr:m1', 'nr:m2', 'nr:m3', 'nr:none']), ['one', 'two', 'three', null]);
  assert.is((await callsAtRedis('mget')) - mgets, 10, 'one MGET of the misses per call');
  assert.is((await getsAtRedis()) - gets, 0, 'nothing for the hot keys');
  await plain.set('nr:m1', 'behind our back'); // no tracking: only a local answer still says 'one'
  assert.equal(await c.mGet(['nr:m2', 'nr:m1']), ['two', 'one']);
  assert.equal(await c.mGet(['nr:m2', 'nr:none']), ['two', null], 'no hot key: sent as is');
});

test("a rule's rate limit refuses commands over it with HK_ERR_RATE_LIMITED, unsent", async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await client(), hk!);
  await plain.set('nrl:a', 'A');
  await promote('nrl:a', [hk!]);
  await waitFor('the limit applies here', () => hk!.limiting, 3000);
  const sets = await callsAtRedis('set');
  const outcomes = await Promise.allSettled(Array.from({ length: 400 }, () => c.set('nrl:a', 'A')));
  const refused = outcomes.filter(
    (o) => o.status === 'rejected' && (o.reason as { code?: string }).code === 'HK_ERR_RATE_LIMITED',
  );
  const written = outcomes.filter((o) => o.status === 'fulfilled').length;
  assert.ok(refused.length > 0, 'some were refused');
  assert.is(refused.length + written, 400, 'refused or written, nothing else');
  assert.is((await callsAtRedis('set')) - sets, written, 'refused ones never reached Redis');
});

test.run();
