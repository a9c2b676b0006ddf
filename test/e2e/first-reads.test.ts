/**
 * Tracked prefixes end to end (`tracking: { prefixes }`, redis/tracking/tracking-session.ts): on a real
 * redis-server and the real `hotkey-hub` CLI, a key under a prefix Redis tracks by broadcast is
 * loaded, when it surges on an instance, from the reply of the read that began the surge —
 * one GET per instance, the floor of a client that caches every key it reads — and never when
 * something may have changed the key since that read: a write from outside the SDK, an acked
 * write by another instance, the broadcast connection lost. Redis's own `INFO commandstats`
 * counts the GETs.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import type { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { createClient } from 'redis';
import { withHotKeys as withNodeRedis } from '@hotkey/sdk/node-redis';
import { destroyAll } from '../support/node-redis.ts';
import { burst, keptRead, leaseApplied, type Reader } from '../support/first-reads.ts';
import { hubProcess } from '../support/e2e.ts';
import { RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait.ts';

const e2e = hubProcess(test, {
  config: {
    apps: { shop: { rules: [{ match: '*', threshold: 400, windowMs: 1000, hotMs: 60_000, cacheTtlMs: 60_000 }] } },
  },
});

let server: RedisServer;
let plain: Redis;
const opened: Redis[] = [];
const nodeOpened: Array<{ destroy(): void }> = [];

test.before(async () => {
  server = await RedisServer.start();
  plain = new Redis(server.url);
});
test.after(async () => {
  for (const c of opened) c.disconnect();
  destroyAll(nodeOpened);
  plain.disconnect();
  await server.stop();
});

interface Instance {
  hk: HotKeyClient;
  /** a wrapped client of each adapter, both with `tracking: { prefixes }` */
  clients: Array<[string, Reader]>;
}

/** A HotKeyClient holding its first lease, and a wrapped ioredis and node-redis client with `prefixes`. */
async function instance(prefixes: string[] = ['flash:']): Promise<Instance> {
  // the tests write their keys before: a write's broadcast that reached us after a first read
  // would (rightly) drop that read
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const io = withHotKeys(new Redis(server.url, { maxRetriesPerRequest: 1 }), hk!, { tracking: { prefixes } });
  opened.push(io);
  const nr = withNodeRedis(createClient({ url: server.url }), hk!, { tracking: { prefixes } });
  nr.on('error', () => {});
  nodeOpened.push(nr);
  await Promise.all([io.ping(), nr.connect()]);
  // a key is loaded under its owner hub's lease, whose first Grant may still be on its way
  await leaseApplied(hk!);
  // each adapter's broadcast session is up (opened at 'ready', not at a first read): a probe
  // read under the prefix is kept
  const clients: Array<[string, Reader]> = [
    ['ioredis', io],
    ['node-redis', nr],
  ];
  for (const [name, c] of clients) await keptRead(hk!, c, `${prefixes[0]}probe-${name}`, name);
  return { hk: hk!, clients };
}

async function commandCalls(name: string): Promise<number> {
  const info = await plain.info('commandstats');
  return Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}
const redisGets = () => commandCalls('get');

async function clientsNamed(name: string): Promise<number> {
  const list = (await plain.client('LIST')) as string;
  return list.split('\n').filter((l) => l.includes(` name=${name} `)).length;
}

/** `n` reads of `key`, each in a job of its own, the next one issued before any reply is read. */
async function turns(c: Reader, key: string, n: number): Promise<unknown[]> {
  const reads: Array<Promise<unknown>> = [];
  for (let i = 0; i < n; i++) {
    reads.push(c.get(key));
    await Promise.resolve();
  }
  return Promise.all(reads);
}

test('a read while the first GET of a tracked key is unanswered surges it, and that GET is its load: 1 GET (both adapters)', async () => {
  await plain.mset('flash:turns-ioredis', 't', 'flash:turns-node-redis', 't');
  const i = await instance();
  for (const [name, c] of i.clients) {
    const key = `flash:turns-${name}`;
    const [gets0, multis0, used0] = [await redisGets(), await commandCalls('multi'), i.hk.stats().recentReadsUsed];
    for (const v of await turns(c, key, 6)) assert.is(v, 't');
    assert.is((await redisGets()) - gets0, 1, `${name}: one GET for the surge`);
    assert.ok(i.hk.isHot(key), `${name}: surged`);
    assert.is(i.hk.stats().recentReadsUsed - used0, 1, `${name}: its load took the first read`);
    assert.is((await commandCalls('multi')) - multis0, 1, `${name}: the load asked only the PTTL (one MULTI)`);
    const mid = await redisGets();
    assert.is(await c.get(key), 't');
    assert.is((await redisGets()) - mid, 0, `${name}: served locally`);
  }
});

test('a first read alone in its job, then a burst that surges the key: still 1 GET (both adapters)', async () => {
  await plain.mset('flash:spread-ioredis', 's', 'flash:spread-node-redis', 's');
  const i = await instance();
  for (const [name, c] of i.clients) {
    const key = `flash:spread-${name}`;
    const gets0 = await redisGets();
    assert.is(await c.get(key), 's');

    for (const v of await burst(c, key, 50)) assert.is(v, 's');
    assert.ok(i.hk.isHot(key), `${name}: surged`);
    assert.is((await redisGets()) - gets0, 1, `${name}: the first read's GET only`);
  }
});

test('reads one after another: the read right after the first reply surges the key, and its load takes that reply: 1 GET (both adapters)', async () => {
  await plain.mset('flash:seq-ioredis', 'q', 'flash:seq-node-redis', 'q');
  const i = await instance();
  for (const [name, c] of i.clients) {
    const key = `flash:seq-${name}`;
    const gets0 = await redisGets();
    assert.is(await c.get(key), 'q');
    assert.not.ok(i.hk.isHot(key), `${name}: one read surges nothing`);
    assert.is(await c.get(key), 'q'); // issued at once on the reply: within RECENT_SURGE_MS of it
    assert.ok(i.hk.isHot(key), `${name}: the second read surged it`);
    for (let n = 0; n < 5; n++) assert.is(await c.get(key), 'q');
    assert.is((await redisGets()) - gets0, 1, `${name}: the first read's GET only`);
  }
});

test('the same reads of a key under no tracked prefix cost the tracked load too: 2 GETs', async () => {
  await plain.set('other:spread-node-redis', 'o');
  const i = await instance();
  const [name, c] = i.clients[1]!;
  const key = `other:spread-${name}`;
  const [gets0, kept] = [await redisGets(), i.hk.stats().recentReads];
  assert.is(await c.get(key), 'o');
  assert.is(i.hk.stats().recentReads, kept, 'nothing kept for it');
  for (const v of await burst(c, key, 50)) assert.is(v, 'o');
  assert.ok(i.hk.isHot(key));
  assert.is((await redisGets()) - gets0, 2);
});

test('a write from outside the SDK after the first read: the surge reads the key again and serves the new value', async () => {
  await plain.mset('flash:outside-ioredis', 'old', 'flash:outside-node-redis', 'old');
  const i = await instance();
  for (const [name, c] of i.clients) {
    const key = `flash:outside-${name}`;
    const kept = i.hk.stats().recentReads;
    assert.is(await c.get(key), 'old');
    assert.is(i.hk.stats().recentReads, kept + 1, `${name}: the first read is kept`);
    await plain.set(key, 'new');
    // Redis's broadcast of the write drops the kept read
    await waitFor(`${name}: the broadcast invalidation`, () => i.hk.stats().recentReads === kept, 3000);
    const gets0 = await redisGets();
    for (const v of await burst(c, key, 50)) assert.is(v, 'new', `${name}: no read of the old value`);
    assert.ok(i.hk.isHot(key));
    assert.is((await redisGets()) - gets0, 1, `${name}: the surge loaded the key itself`);
  }
});

test('an invalidation another instance had acked after the first read: the surge does not serve that read', async () => {
  // hk.invalidate alone (no write to Redis, so no broadcast from Redis either): the reader holds
  // nothing yet, so the hub's invalidation (protocol 3) is acked without reaching it; its surge
  // registers the key with the write clock its kept read was sent under, the hub answers Written,
  // and the value is loaded again before anything is served
  await plain.mset('flash:acked-ioredis', 'v0', 'flash:acked-node-redis', 'v0');
  const reader = await instance();
  const writer = await instance();
  for (const [name, c] of reader.clients) {
    const key = `flash:acked-${name}`;
    const kept = reader.hk.stats().recentReads;
    assert.is(await c.get(key), 'v0');
    assert.is(reader.hk.stats().recentReads, kept + 1, `${name}: the first read is kept`);
    const ack = await writer.hk.invalidate(key); // resolves once every holder applied it
    assert.equal(ack.fenced, [], 'acked, none fenced');
    const [gets0, written0] = [await redisGets(), reader.hk.stats().holdsWritten];
    for (const v of await burst(c, key, 50)) assert.is(v, 'v0');
    assert.ok(reader.hk.isHot(key));
    assert.is(reader.hk.stats().holdsWritten, written0 + 1, `${name}: the registration said Written`);
    assert.is((await redisGets()) - gets0, 1, `${name}: the load read the key again`);
  }
});

test('prefixes open the watch connections at ready; without them there is none and nothing is kept', async () => {
  const before = await clientsNamed('hotkey-watch');
  const prefixes = async () => Number(/tracking_total_prefixes:(\d+)/.exec(await plain.info('stats'))?.[1]);
  const prefixes0 = await prefixes();
  const [hk] = await e2e.sdks(1);
  const io = withHotKeys(new Redis(server.url), hk!);
  opened.push(io);
  await io.ping();
  await io.set('flash:none', 'n');
  assert.is(await io.get('flash:none'), 'n');
  assert.is(hk!.stats().recentReads, 0);
  assert.is(await clientsNamed('hotkey-watch'), before, 'no watch connection without prefixes');
  const watched = withHotKeys(new Redis(server.url), hk!, { tracking: { prefixes: ['a:', 'a:b:', 'c:'] } });
  opened.push(watched);
  await waitFor(
    'a watch connection before any read',
    async () => (await clientsNamed('hotkey-watch')) === before + 1,
    5000,
  );
  // its broadcast covers a: and c: (a:b: inside a:, dropped: Redis would refuse the overlap)
  await waitFor('two prefixes more tracked', async () => (await prefixes()) === prefixes0 + 2, 5000);
});

// Runs after every test that counts connections: its CLIENT KILL makes every earlier instance's
// watch connections reconnect, which would race a later count of them.
test('the broadcast connection lost after the first read: its reply answers no load', async () => {
  await plain.set('flash:lost-ioredis', 'x');
  const i = await instance();
  const [name, c] = i.clients[0]!;
  const key = `flash:lost-${name}`;
  assert.is(await c.get(key), 'x');
  const used0 = i.hk.stats().recentReadsUsed;
  await plain.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes'); // every client connection but `plain`'s
  // written while our connections are down: no broadcast of it reaches us
  await plain.set(key, 'y');
  await waitFor('the watch connections back', async () => (await clientsNamed('hotkey-watch')) >= 2, 5000);
  // the wrapped client back (another key: a read of this one would replace the kept read)
  await waitFor(
    'reads answered again',
    async () => {
      try {
        return (await c.get('flash:lost-other')) === null;
      } catch {
        return false; // reconnecting
      }
    },
    5000,
  );
  for (const v of await burst(c, key, 50)) assert.is(v, 'y', 'the value written while the connections were down');
  assert.ok(i.hk.isHot(key));
  assert.is(i.hk.stats().recentReadsUsed - used0, 0, 'the read kept from before the loss answered no load');
});

test('bad prefixes are refused at wrapping with a TypeError naming the field', () => {
  const hk = e2e.clients[0]!;
  const bad: unknown[] = ['flash:', [1], [null], Array.from({ length: 65 }, (_, n) => `p${n}:`), ['x'.repeat(1025)]];
  for (const prefixes of bad) {
    const client = new Redis(server.url, { lazyConnect: true });
    assert.throws(
      () => withHotKeys(client, hk, { tracking: { prefixes: prefixes as string[] } }),
      (e: Error) => e instanceof TypeError && /tracking\.prefixes|tracking prefix/.test(e.message),
      `refused: ${JSON.stringify(prefixes).slice(0, 40)}`,
    );
    const nr = createClient({ url: server.url });
    assert.throws(
      () => withNodeRedis(nr, hk, { tracking: { prefixes: prefixes as string[] } }),
      (e: Error) => e instanceof TypeError && /tracking\.prefixes|tracking prefix/.test(e.message),
    );
    client.disconnect();
  }
});

test.run();
