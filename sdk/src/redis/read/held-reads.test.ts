/**
 * Held reads (held-reads.ts) through both adapters on a real redis-server: a job's cold GETs of
 * one key reach Redis as one GET; what is held goes out before any other command of the client,
 * in call order (Redis's MONITOR on a connection of its own shows the order it executed); a write
 * between two GETs of a key in one job is seen by the second; a held GET's error reaches each of
 * its callers; a client closed, or an hk closed, with GETs held still answers them.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from 'redis';
import { Redis } from 'ioredis';
import { withHotKeys as withIoredis } from '../../ioredis.ts';
import { withHotKeys as withNodeRedis } from '../../node-redis.ts';
import { HotKeyClient } from '../../client/client.ts';
import { destroyAll } from '../../../../test/support/node-redis.ts';
import { waitFor, within } from '../../../../test/support/wait.ts';
import { type AckingPeer, startAckingPeer } from '../acking-peer.test-helper.ts';

let fx: AckingPeer;
let plain: Redis;
let monitored: string[][] = [];
let monitor: Redis | undefined;
let monitorSource: Redis | undefined;
const opened: Array<{ disconnect(): unknown }> = [];
const nodeOpened: Array<{ destroy(): void }> = [];

/** the two adapters' clients, as the tests use them */
interface Client {
  get(key: string): Promise<unknown>;
  set(key: string, value: string): Promise<unknown>;
  incr(key: string): Promise<unknown>;
  rpush(key: string, value: string): Promise<unknown>;
  quit(): Promise<unknown>;
}

async function ioredisClient(hk: HotKeyClient = fx.hk): Promise<Client> {
  const c = withIoredis(new Redis(fx.server.url, { maxRetriesPerRequest: 1 }), hk, { tracking: false });
  opened.push(c);
  await c.ping();
  return c;
}

async function nodeRedisClient(hk: HotKeyClient = fx.hk): Promise<Client> {
  const c = withNodeRedis(createClient({ url: fx.server.url }), hk, { tracking: false });
  c.on('error', () => {});
  nodeOpened.push(c);
  await c.connect();
  return {
    get: (k) => c.get(k),
    set: (k, v) => c.set(k, v),
    incr: (k) => c.incr(k),
    rpush: (k, v) => c.rPush(k, v),
    quit: () => c.quit(),
  };
}

const ADAPTERS = { ioredis: ioredisClient, 'node-redis': nodeRedisClient } as const;

test.before(async () => {
  fx = await startAckingPeer();
  plain = new Redis(fx.server.url);
  monitorSource = new Redis(fx.server.url, { lazyConnect: true });
  monitor = await monitorSource.monitor();
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (typeof args[1] === 'string' && args[1].startsWith('held:')) monitored.push(args);
  });
});

test.after(async () => {
  for (const c of opened) c.disconnect();
  destroyAll(nodeOpened);
  monitor?.disconnect();
  monitorSource?.disconnect();
  plain.disconnect();
  await fx?.close();
});

/** GETs Redis executed so far */
async function redisGets(): Promise<number> {
  const info = await plain.info('commandstats');
  return Number(/cmdstat_get:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

/** the commands of keys `held:<tag>:*` Redis executed, once `n` of them are in */
async function executed(tag: string, n: number): Promise<string[]> {
  const mine = () => monitored.filter((a) => a[1]!.startsWith(`held:${tag}:`));
  await waitFor(`${n} commands of held:${tag} in MONITOR`, () => mine().length >= n);
  return mine().map((a) => `${a[0]!.toLowerCase()} ${a[1]}`);
}

for (const [name, open] of Object.entries(ADAPTERS)) {
  test(`${name}: a job's cold GETs of one key reach Redis as one GET, every caller answered`, async () => {
    const c = await open();
    await plain.set(`held:${name}:one`, 'v');
    await plain.set(`held:${name}:two`, 'w');
    const before = await redisGets();
    const got = await Promise.all([
      ...Array.from({ length: 10 }, () => c.get(`held:${name}:one`)),
      ...Array.from({ length: 5 }, () => c.get(`held:${name}:two`)),
    ]);
    assert.equal(got, [...Array(10).fill('v'), ...Array(5).fill('w')]);
    assert.is((await redisGets()) - before, 2, 'one GET per key');
  });

  test(`${name}: held GETs go out before the next other command, in call order`, async () => {
    const c = await open();
    const tag = `order-${name}`;
    await plain.set(`held:${tag}:a`, '1');
    monitored = [];
    const replies = await Promise.all([
      c.get(`held:${tag}:a`),
      c.get(`held:${tag}:b`),
      c.incr(`held:${tag}:n`),
      c.get(`held:${tag}:a`),
      c.get(`held:${tag}:n`),
    ]);
    assert.equal(replies, ['1', null, 1, '1', '1']);
    // the second GET of `a` goes out while the first is unanswered: `a` surges here
    // (client/read/surge-local.ts) and that GET is its load, the PTTL right behind it
    assert.equal(await executed(tag, 6), [
      `get held:${tag}:a`,
      `get held:${tag}:b`,
      `incr held:${tag}:n`,
      `get held:${tag}:a`,
      `pttl held:${tag}:a`,
      `get held:${tag}:n`,
    ]);
  });

  test(`${name}: a write between two GETs of a key in one job is seen by the second`, async () => {
    const c = await open();
    const key = `held:${name}:rw`;
    await plain.set(key, 'old');
    const [first, ok, second, third] = await Promise.all([c.get(key), c.set(key, 'new'), c.get(key), c.get(key)]);
    assert.is(first, 'old');
    assert.is(ok, 'OK');
    assert.is(second, 'new');
    assert.is(third, 'new');
  });

  test(`${name}: a held GET's error reaches each of its callers`, async () => {
    const c = await open();
    const key = `held:${name}:list`;
    await c.rpush(key, 'x');
    const settled = await within(
      'every held GET settled',
      Promise.allSettled(Array.from({ length: 4 }, () => c.get(key))),
      3000,
    );
    for (const s of settled) {
      assert.is(s.status, 'rejected');
      assert.match(String((s as PromiseRejectedResult).reason), /WRONGTYPE/);
    }
  });

  test(`${name}: QUIT right after GETs in one job: the GETs are answered first`, async () => {
    const c = await open();
    const key = `held:${name}:quit`;
    await plain.set(key, 'bye');
    const reads = [c.get(key), c.get(key)];
    const quit = c.quit();
    assert.equal(await within('the reads', Promise.all(reads), 3000), ['bye', 'bye']);
    await quit;
  });

  test(`${name}: hk closed with GETs held: they are answered by Redis`, async () => {
    const own = new HotKeyClient({ app: 'shop', hubs: fx.peer.url, flushIntervalMs: 10 });
    await own.ready({ signal: AbortSignal.timeout(3000) });
    const c = await open(own);
    const key = `held:${name}:hk-closed`;
    await plain.set(key, 'still');
    const reads = [c.get(key), c.get(key)];
    const closed = own.close();
    assert.equal(await within('the reads', Promise.all(reads), 3000), ['still', 'still']);
    await closed;
  });
}

test('node-redis: close() right after GETs in one job: the GETs are answered first', async () => {
  const c = withNodeRedis(createClient({ url: fx.server.url }), fx.hk, { tracking: false });
  c.on('error', () => {});
  nodeOpened.push(c);
  await c.connect();
  await plain.set('held:close', 'last');
  const reads = [c.get('held:close'), c.get('held:close')];
  const closed = c.close();
  assert.equal(await within('the reads', Promise.all(reads), 3000), ['last', 'last']);
  await closed;
});

test.run();
