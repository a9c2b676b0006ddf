/**
 * Hot reads while no lease vouches for a cached value (the hub frozen by SIGSTOP): a wrapped client
 * cannot cache the key's value, so each read of it must cost Redis what a plain client's read
 * costs — one GET, and one GET for the reads of one synchronous job — not a tracked load (MULTI,
 * CLIENT CACHING, GET, PTTL, EXEC) per read. A write during the outage is seen by the next read;
 * once the hub is back (SIGCONT) and the lease with it, the key is served locally again. Both
 * adapters, on a real redis-server and the real `hotkey-hub` CLI; Redis's own `INFO commandstats`
 * counts what reached it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import type { HotKeyClient } from '@hotkey/sdk';
import { adapterView } from '@hotkey/sdk/internal';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { withHotKeys as withNodeRedis } from '@hotkey/sdk/node-redis';
import { allCommandCalls, commandCalls } from '../support/commandstats.ts';
import { hubProcess } from '../support/e2e.ts';
import { connectNoted, destroyAll } from '../support/node-redis.ts';
import { promotions } from '../support/promoted.ts';
import { RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait.ts';

const THRESHOLD = 100;
const e2e = hubProcess(test, {
  config: { apps: { shop: { rules: [{ match: '*', threshold: THRESHOLD, hotMs: 60_000, cacheTtlMs: 60_000 }] } } },
});

let server: RedisServer;
let plain: Redis;
/** how to close what the tests opened */
const closers: Array<() => unknown> = [];

test.before(async () => {
  server = await RedisServer.start();
  plain = new Redis(server.url);
});
test.after(async () => {
  e2e.hub.child.kill('SIGCONT'); // a failed test may leave it stopped
  for (const close of closers) close();
  plain.disconnect();
  await server.stop();
});

interface Reader {
  get(key: string): Promise<string | null>;
}

/** A HotKeyClient that notices a frozen hub within ~1 s and keeps its hot keys hot (not cached) for 30 s without it. */
async function instance(): Promise<HotKeyClient> {
  const [hk] = await e2e.sdks(1, () => ({
    flushIntervalMs: 20,
    pingIntervalMs: 250,
    livenessTimeoutMs: 1000,
    maxStaleMs: 30_000,
    surgeLocal: false, // hot only by the hub's promotion: its lease is what the test takes away
  }));
  return hk!;
}

/**
 * Every command Redis executed but the probe's own INFO and the tracking connections' heartbeat
 * PINGs (one a second, however many reads: a slow run had two of them among its 20 reads).
 */
const commands = () => allCommandCalls(plain, ['info', 'ping']);
const gets = () => commandCalls(plain, 'get');

async function sequential(c: Reader, key: string, n: number, expected: string): Promise<void> {
  for (let i = 0; i < n; i++) assert.is(await c.get(key), expected);
}

/** `n` reads of `key` in one synchronous job (a Promise.all), each answering `expected`. */
async function job(c: Reader, key: string, n: number, expected: string): Promise<void> {
  const got = await Promise.all(Array.from({ length: n }, () => c.get(key)));
  for (const v of got) assert.is(v, expected);
}

/** What Redis executed for `run`: every command, and the GETs among them. */
async function cost(run: () => Promise<void>): Promise<{ commands: number; gets: number }> {
  const [c0, g0] = [await commands(), await gets()];
  await run();
  const [c1, g1] = [await commands(), await gets()];
  return { commands: c1 - c0, gets: g1 - g0 };
}

async function outage(name: string, hk: HotKeyClient, c: Reader): Promise<void> {
  const key = `item:${name}`;
  await plain.set(key, 'v1');
  const promoted = promotions([hk], key);
  await waitFor(
    `${key} promoted by the hub`,
    async () => {
      await job(c, key, 50, 'v1');
      return promoted.count > 0;
    },
    8000,
  );
  await waitFor(`${key} served locally`, async () => (await cost(() => job(c, key, 20, 'v1'))).gets === 0, 5000);

  e2e.hub.child.kill('SIGSTOP');
  try {
    // the lease lapses (≤ the hub's 2 s leaseMs); the key stays hot (maxStaleMs 30 s)
    await waitFor(`${key}'s lease to lapse`, () => !adapterView(hk).vouches(key), 6000);
    assert.ok(hk.isHot(key), 'still hot, only not vouched for');
    const unleased = hk.stats().unleased;

    const one = await cost(() => sequential(c, key, 20, 'v1'));
    assert.is(one.gets, 20, `one GET per read on its own (${JSON.stringify(one)})`);
    assert.is(one.commands, 20, `and nothing else: no tracked load (${JSON.stringify(one)})`);

    const batch = await cost(() => job(c, key, 50, 'v1'));
    assert.is(batch.gets, 1, `one GET for the 50 reads of one job (${JSON.stringify(batch)})`);
    assert.is(batch.commands, 1, `and nothing else (${JSON.stringify(batch)})`);
    assert.is(hk.stats().unleased - unleased, 70, 'every read counted as a read of a hot key without a lease');

    // a write during the outage (by a client without the SDK): the next read sees it
    await plain.set(key, 'v2');
    assert.is(await c.get(key), 'v2');
    await job(c, key, 10, 'v2');
  } finally {
    e2e.hub.child.kill('SIGCONT');
  }
  // the hub is back, the lease with it: served locally again, the value current
  await waitFor(`${key} vouched for again`, () => adapterView(hk).vouches(key), 10_000);
  await waitFor(`${key} served locally again`, async () => (await cost(() => job(c, key, 20, 'v2'))).gets === 0, 5000);
  assert.is((await cost(() => sequential(c, key, 5, 'v2'))).gets, 0);
}

test('ioredis: a hot key without a lease costs one GET per read, one per job; local again with the lease', async () => {
  const hk = await instance();
  const redis = withHotKeys(new Redis(server.url, { maxRetriesPerRequest: 1 }), hk);
  closers.push(() => redis.disconnect());
  await redis.ping();
  await outage('ioredis', hk, redis);
});

test('node-redis: a hot key without a lease costs one GET per read, one per job; local again with the lease', async () => {
  const hk = await instance();
  const c = withNodeRedis(createClient({ url: server.url }), hk);
  const noted: Array<{ destroy(): void }> = [];
  closers.push(() => destroyAll(noted));
  await connectNoted(c, noted);
  await outage('node-redis', hk, c);
});

test.run();
