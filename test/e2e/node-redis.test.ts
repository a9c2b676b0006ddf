/**
 * The node-redis adapter (`@hotkey/sdk/node-redis`) on a real redis-server: hot GETs answered
 * locally (counted at Redis with INFO commandstats), every write path invalidating before it
 * settles (methods, sendCommand, multi().exec(), execAsPipeline, scripts, duplicate, a pool),
 * outside writes heard through tracking, the TTL capped by PTTL, key identity by database.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient, createClientPool } from 'redis';
import type { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/node-redis';
import { hubInProcess } from '../support/e2e.ts';
import { promoteInProcess } from '../support/promote.ts';
import { RedisServer } from '../support/redis-server.ts';
import { delay, waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: { rules: [{ match: '*', threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs: 600_000 }] },
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

/** GETs Redis executed so far (INFO commandstats) */
async function getsAtRedis(): Promise<number> {
  const info = await plain.info('commandstats');
  return Number(/^cmdstat_get:calls=(\d+)/m.exec(info)?.[1] ?? 0);
}

const promote = (key: string, on: readonly HotKeyClient[]) => promoteInProcess(e2e.hub, 'shop', key, on);

/** Reads `key` on `c` until it answers `value` twice without a GET reaching Redis. */
async function servedLocally(c: Client, key: string, value: string): Promise<void> {
  await waitFor(
    `${key} served locally as ${value}`,
    async () => {
      if ((await c.get(key)) !== value) return false;
      const before = await getsAtRedis();
      const got = [await c.get(key), await c.get(key)];
      return got.every((v) => v === value) && (await getsAtRedis()) === before;
    },
    5000,
  );
}

test.before(async () => {
  server = await RedisServer.start();
  plain = await client();
});

test.after(async () => {
  for (const c of opened) {
    try {
      c.destroy();
    } catch {
      // never connected
    }
  }
  await delay(20);
  await server?.stop();
});

test('a hot GET is answered locally: Redis sees no GET of it after the first load', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await client(), hk!);
  await plain.set('nr:hot', 'v1');
  assert.is(await c.get('nr:hot'), 'v1', 'cold: from Redis');
  await promote('nr:hot', [hk!]);
  await servedLocally(c, 'nr:hot', 'v1');
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
  await servedLocally(reader, key, 'v0');
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
    await servedLocally(reader, key, value);
  }
});

test('an outside write (a plain node-redis client) drops the hot value through tracking', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await client(), hk!);
  const key = 'nr:outside';
  await plain.set(key, 'a');
  await promote(key, [hk!]);
  await servedLocally(c, key, 'a');
  await plain.set(key, 'b');
  await waitFor('the outside write is seen', async () => (await c.get(key)) === 'b', 2000);
  await servedLocally(c, key, 'b');
  await plain.flushDb();
  await waitFor('FLUSHDB is seen', async () => (await c.get(key)) === null, 2000);
});

test('a cached value does not outlive its Redis TTL (capped by PTTL)', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await client(), hk!, { tracking: false });
  const key = 'nr:ttl';
  await plain.set(key, 'short', { PX: 400 });
  await promote(key, [hk!]);
  await servedLocally(c, key, 'short');
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
  await servedLocally(db0, key, 'zero');
  // hk holds one entry per key, tagged with its namespace: db 1's client never takes db 0's
  for (let i = 0; i < 5; i++) assert.is(await db1.get(key), 'one');
  assert.is(await db0.get(key), 'zero');
  // SELECT moves a client: its reads follow the database
  await db0.select(1);
  assert.is(await db0.get(key), 'one');
  await db0.select(0);
  assert.is(await db0.get(key), 'zero');
});

test.run();
