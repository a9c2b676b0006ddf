/**
 * Writes from anywhere, on a standalone redis-server: hot values cached by wrapped ioredis clients
 * (three instances, each its own HotKeyClient) are dropped when a client without the SDK writes
 * the key — plain ioredis, redis-cli, FLUSHDB — through Redis server-assisted tracking; a killed
 * tracking connection stops the serving of that node's values until it is back; Redis-side
 * tracking state holds the hot keys only; FLUSHDB / SWAPDB / multi({ pipeline: false }) through
 * the wrapper reach instances that do not track, through the hub.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import type { WithHotKeysOptions } from '@hotkey/sdk/ioredis';
import { hubInProcess } from '../support/e2e.ts';
import { RedisServer } from '../support/redis-server.ts';
import {
  measureStaleness,
  promoteOn,
  readsNew,
  summary,
  warm,
  wrappedReaders,
  type Reader,
} from '../support/staleness.ts';
import { delay, waitFor, within } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: { rules: [{ match: '*', threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs: 600_000 }] },
    },
  },
});

let server: RedisServer;
const opened: Redis[] = [];
let plain: Redis;

function redis(): Redis {
  const c = new Redis(server.url, { maxRetriesPerRequest: 1 });
  opened.push(c);
  return c;
}

/** `n` instances: a HotKeyClient each, and a wrapped client. */
const readers = (n: number, wrap: WithHotKeysOptions = {}): Promise<Reader<Redis>[]> =>
  wrappedReaders(e2e, n, redis, wrap);
const promote = (key: string, on: readonly Reader[]): Promise<void> => promoteOn(e2e, key, on);

/** CLIENT LIST lines of our connections named `name` (hotkey-tracking / hotkey-invalidations). */
async function connections(name: string): Promise<{ id: string; line: string }[]> {
  const list = (await plain.client('LIST')) as string;
  return list
    .split('\n')
    .filter((line) => line.includes(` name=${name} `))
    .map((line) => ({ id: /(?:^|\s)id=(\d+)/.exec(line)![1]!, line }));
}

async function statsOf(section: string, field: string): Promise<number> {
  const info = await plain.info(section);
  return Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(info)?.[1] ?? Number.NaN);
}

test.before(async () => {
  server = await RedisServer.start();
  plain = redis();
});

test.after(async () => {
  for (const c of opened) c.disconnect();
  await delay(20);
  await server?.stop();
});

test('outside writes (plain ioredis) drop a hot value on every instance: 200 writes, staleness reported', async () => {
  const group = await readers(3);
  const keys = ['item:1', 'item:2', 'item:3'];
  for (const key of keys) {
    await plain.set(key, 'v0');
    await promote(key, group);
  }
  const ms = await measureStaleness({
    readers: group,
    keys,
    writes: 200,
    write: (key, value) => plain.set(key, value),
  });
  const s = summary(ms);
  console.log(
    `# standalone, plain ioredis writer → 3 instances: staleness p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms, max ${s.max.toFixed(2)} ms over ${s.n} writes`,
  );
  assert.is(s.n, 200);
  assert.ok(s.max < 2000, 'every write dropped within 2 s');
  // the reads in between were local: the keys were really cached between writes
  for (const r of group) assert.ok(r.hk.stats().hits >= 400, `${r.hk.instanceId} hits ${r.hk.stats().hits}`);
});

test('hot hashes and redis-cli writers too', async () => {
  const group = await readers(2);
  await plain.hset('user:7', { name: 'ann', city: 'oslo' });
  await promote('user:7', group);
  for (const r of group) {
    assert.is(await r.redis.hget('user:7', 'name'), 'ann');
    await waitFor(
      'user:7 cached',
      async () => {
        const hits = r.hk.stats().hits;
        await r.redis.hget('user:7', 'name');
        await r.redis.hgetall('user:7');
        return r.hk.stats().hits - hits === 2;
      },
      3000,
      2,
    );
  }
  await plain.hset('user:7', 'name', 'bob');
  for (const r of group) {
    await waitFor('hget sees bob', async () => (await r.redis.hget('user:7', 'name')) === 'bob', 2000, 1);
    assert.equal(await r.redis.hgetall('user:7'), { name: 'bob', city: 'oslo' });
  }
  // redis-cli, another process entirely
  await plain.set('item:cli', 'v0');
  await promote('item:cli', group);
  for (let i = 1; i <= 10; i++) {
    for (const r of group) await warm(r, 'item:cli');
    const cli = spawn('redis-cli', ['-p', String(server.port), 'set', 'item:cli', `cli-${i}`], { stdio: 'ignore' });
    await within('redis-cli to exit', once(cli, 'exit'), 5000);
    for (const r of group) await readsNew(r, 'item:cli', `cli-${i}`, 2000);
  }
});

test('Redis-side tracking state holds hot keys only; the user connection never tracks', async () => {
  const before = await statsOf('stats', 'tracking_total_keys');
  const [r] = await readers(1);
  for (let i = 0; i < 200; i++) await r!.redis.get(`cold:${i}`); // cold reads: not tracked
  const hot = ['track:a', 'track:b', 'track:c'];
  for (const key of hot) {
    await plain.set(key, 'v');
    await promote(key, [r!]);
    await warm(r!, key);
  }
  const tracked = (await statsOf('stats', 'tracking_total_keys')) - before;
  assert.ok(tracked <= hot.length, `tracking_total_keys grew by ${tracked}, hot keys ${hot.length}`);
  assert.ok(tracked >= 1, 'the hot keys are tracked');
  // the wrapper's reader tracks in OPTIN mode, redirected to its invalidation subscriber
  const readersNow = await connections('hotkey-tracking');
  const subs = await connections('hotkey-invalidations');
  assert.ok(readersNow.length >= 1 && subs.length >= 1);
  const info = readersNow.map((c) => c.line).find((line) => line.includes('flags=t'));
  assert.ok(info, 'a tracking reader (CLIENT LIST flags t)');
  assert.ok(
    subs.every((c) => /sub=1/.test(c.line)),
    'subscribers are subscribed',
  );
  assert.equal(
    ((await r!.redis.call('CLIENT', 'TRACKINGINFO')) as unknown[]).slice(0, 2),
    ['flags', ['off']],
    'the user connection does not track',
  );
});

test('hk.close() closes the tracking connections; the Redis client stays usable', async () => {
  const [r] = await readers(1);
  await plain.set('close:a', 'v1');
  await promote('close:a', [r!]);
  await warm(r!, 'close:a');
  const before = [(await connections('hotkey-tracking')).length, (await connections('hotkey-invalidations')).length];
  assert.ok(before[0]! >= 1 && before[1]! >= 1, 'tracking connections are up');
  await r!.hk.close();
  await waitFor('the tracking pair closed', async () => {
    const now = [(await connections('hotkey-tracking')).length, (await connections('hotkey-invalidations')).length];
    return now[0] === before[0]! - 1 && now[1] === before[1]! - 1;
  });
  await plain.set('close:a', 'v2');
  assert.is(await r!.redis.get('close:a'), 'v2', 'reads go to Redis');
  await delay(50);
  assert.is((await connections('hotkey-tracking')).length, before[0]! - 1, 'no tracking connection made again');
});

test("a killed tracking connection: that node's values are not served until it is back", async () => {
  for (const role of ['hotkey-invalidations', 'hotkey-tracking']) {
    // one instance's tracking connections only, so that CLIENT LIST names the victim
    for (const c of opened.splice(1)) c.disconnect();
    await e2e.closeClients();
    await waitFor(
      'earlier tracking connections gone',
      async () =>
        (await connections('hotkey-tracking')).length + (await connections('hotkey-invalidations')).length === 0,
      5000,
    );
    const [r] = await readers(1);
    await plain.set('kill:k', 'v0');
    await promote('kill:k', [r!]);
    await warm(r!, 'kill:k');
    const [victim] = await connections(role);
    assert.ok(victim, `${role} connection`);
    // keep it down for a while: Redis refuses new connections while maxclients is reached
    const connected = await statsOf('clients', 'connected_clients');
    await plain.config('SET', 'maxclients', String(connected - 1));
    try {
      await plain.client('KILL', 'ID', victim.id);
      // while it is down Redis cannot tell us about writes: none may be missed
      for (let i = 1; i <= 20; i++) {
        await plain.set('kill:k', `down-${i}`);
        assert.is(await r!.redis.get('kill:k'), `down-${i}`, `${role} killed: read ${i} after a write`);
        await delay(10);
      }
      assert.is((await connections(role)).length, 0, 'it stayed down');
    } finally {
      await plain.config('SET', 'maxclients', '10000');
    }
    // back: served locally again, and outside writes are heard again
    await waitFor(`${role} back`, async () => (await connections(role)).length === 1, 5000);
    await warm(r!, 'kill:k', 5000);
    await plain.set('kill:k', 'after');
    await readsNew(r!, 'kill:k', 'after', 2000);
  }
});

test('FLUSHDB from outside drops every value of that node on every instance', async () => {
  const group = await readers(3);
  for (const key of ['fl:a', 'fl:b']) {
    await plain.set(key, 'v');
    await promote(key, group);
    for (const r of group) await warm(r, key);
  }
  await plain.flushdb();
  for (const r of group) {
    await waitFor('fl:a gone', async () => (await r.redis.get('fl:a')) === null, 2000, 1);
    assert.is(await r.redis.get('fl:b'), null);
  }
});

test('FLUSHDB, SWAPDB and multi({ pipeline: false }) through the wrapper reach instances that do not track (hub flush)', async () => {
  const group = await readers(3, { tracking: false });
  const [writer, ...others] = group as [Reader, ...Reader[]];
  const load = async (key: string, value: string) => {
    await plain.set(key, value);
    await promote(key, group);
    for (const r of group) await warm(r, key);
  };
  await load('wf:a', 'v');
  await plain.set('wf:a', 'unseen'); // tracking is off: nobody hears this one
  for (const r of others) assert.is(await r.redis.get('wf:a'), 'v', 'untracked: still served locally');
  assert.is(await writer.redis.flushdb(), 'OK');
  for (const r of others) assert.is(await r.redis.get('wf:a'), null, 'dropped before flushdb() resolved');

  await load('wf:b', 'db0');
  await plain.select(1);
  await plain.set('wf:b', 'db1');
  await plain.select(0);
  assert.is(await writer.redis.swapdb(0, 1), 'OK');
  for (const r of others) assert.is(await r.redis.get('wf:b'), 'db1', 'swapped in before swapdb() resolved');
  await writer.redis.swapdb(0, 1);

  await load('wf:c', 'v1');
  const tx = writer.redis.multi({ pipeline: false });
  assert.is(await tx, 'OK');
  assert.is(await writer.redis.set('wf:c', 'v2'), 'QUEUED');
  assert.is(await writer.redis.get('wf:c'), 'QUEUED', 'no local answer inside an open MULTI');
  for (const r of others) assert.is(await r.redis.get('wf:c'), 'v1', 'not invalidated at QUEUED');
  assert.is(((await writer.redis.exec()) as unknown[]).length, 2);
  for (const r of others) assert.is(await r.redis.get('wf:c'), 'v2', 'invalidated when EXEC replied');
  assert.is(await writer.redis.get('wf:c'), 'v2');
  // a pipelined MULTI with FLUSHDB flushes at EXEC too
  await load('wf:d', 'v');
  await writer.redis.multi().flushdb().exec();
  for (const r of others) assert.is(await r.redis.get('wf:d'), null);
});

test.run();
