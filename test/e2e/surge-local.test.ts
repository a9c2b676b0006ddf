/**
 * Local surges end to end, on a real redis-server and the real `hotkey-hub` CLI: wrapped ioredis
 * clients (each with its own HotKeyClient) serve a key that surges on them from their local cache
 * before the hub promotes it; an acked write by another instance is never followed by a stale
 * read; a write by a plain client drops the value through Redis tracking; a key the hub never
 * confirms stops being served locally once its two windows are up. Redis's own `INFO
 * commandstats` counts the GETs that reached it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import type { HotKeyClient, SurgeLocalOptions } from '@hotkey/sdk';
import { withHotKeys, type WithHotKeysOptions } from '@hotkey/sdk/ioredis';
import { createClient } from 'redis';
import { withHotKeys as withNodeRedis } from '@hotkey/sdk/node-redis';
import { destroyAll } from '../support/node-redis.ts';
import { hubProcess } from '../support/e2e.ts';
import { RedisServer } from '../support/redis-server.ts';
import { delay, waitFor } from '../support/wait.ts';

// `flash:*` surges locally at 16 reads in a slice (0.04 × 400) or 8 in one job, and is promoted by
// the hub at 400 reads/s; `never:*` is never promoted (its clients lower `fraction` to surge at the floor).
const e2e = hubProcess(test, {
  config: {
    apps: {
      shop: {
        rules: [
          { match: 'never:*', threshold: 1_000_000, windowMs: 1000, hotMs: 60_000, cacheTtlMs: 60_000 },
          { match: '*', threshold: 400, windowMs: 1000, hotMs: 60_000, cacheTtlMs: 60_000 },
        ],
      },
    },
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
  redis: Redis;
}

/** `n` service instances: a HotKeyClient each and a wrapped ioredis client, both ready. */
async function instances(
  n: number,
  surgeLocal: SurgeLocalOptions = {},
  wrap: WithHotKeysOptions = {},
): Promise<Instance[]> {
  const hks = await e2e.sdks(n, () => ({ flushIntervalMs: 20, surgeLocal }));
  const out = hks.map((hk) => {
    const redis = withHotKeys(new Redis(server.url, { maxRetriesPerRequest: 1 }), hk, wrap);
    opened.push(redis);
    return { hk, redis };
  });
  await Promise.all(out.map((i) => i.redis.ping()));
  // a local surge needs the instance's lease from the owner hub, whose first Grant may still be on
  // its way after ready(): a probe key of its own surges once it is there
  await Promise.all(
    out.map((i, n) =>
      waitFor(
        'the first lease applied',
        async () => {
          await Promise.all(Array.from({ length: 5 }, () => i.hk.get(`lease-probe:${n}`, () => 'p')));
          return i.hk.isHot(`lease-probe:${n}`);
        },
        5000,
      ),
    ),
  );
  return out;
}

/** GETs Redis executed so far (every connection: the wrapped clients' and their tracking loads). */
async function redisGets(): Promise<number> {
  const info = await plain.info('commandstats');
  return Number(/cmdstat_get:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

/** `n` concurrent GETs of `key` on one instance; every answer must be `expected`. */
async function burst(i: Instance, key: string, n: number, expected: string): Promise<void> {
  const got = await Promise.all(Array.from({ length: n }, () => i.redis.get(key)));
  for (const v of got) assert.is(v, expected);
}

test('a key that surges on an instance is served locally from its first slice: a few GETs reach Redis', async () => {
  const fleet = await instances(3);
  await plain.set('flash:1', 'stock:42');
  const promotions = fleet.map((i) => i.hk.stats().surgeLocalPromotions);
  const before = await redisGets();
  // one burst per instance, as a flash sale's first 10 ms tick issues them
  await Promise.all(fleet.map((i) => burst(i, 'flash:1', 50, 'stock:42')));
  const gets = (await redisGets()) - before;
  for (const [n, i] of fleet.entries()) {
    assert.is(i.hk.stats().surgeLocalPromotions - promotions[n]!, 1, 'promoted locally');
    assert.ok(i.hk.isHot('flash:1'));
  }
  // per instance: its 50 reads are counted before any is sent (one job), so the key surges before
  // the first GET leaves: one tracked load for them all; the plain client would have sent 150
  assert.is(gets, 3, `${gets} GETs reached Redis for 150 reads`);
  // served from the cache from then on: the next bursts add no GET
  const mid = await redisGets();
  await Promise.all(fleet.map((i) => burst(i, 'flash:1', 50, 'stock:42')));
  assert.is((await redisGets()) - mid, 0);
});

/** `i`'s HotKeyClient over a wrapped node-redis client of its own (tracking on, as by default). */
async function nodeRedisOf(i: Instance): Promise<{ get(key: string): Promise<unknown> }> {
  const c = withNodeRedis(createClient({ url: server.url }), i.hk);
  c.on('error', () => {});
  nodeOpened.push(c);
  await c.connect();
  return c;
}

/** `i`'s wrapped ioredis client and a wrapped node-redis client of its own, by adapter name. */
async function bothAdapters(i: Instance): Promise<Array<[string, { get(key: string): Promise<unknown> }]>> {
  return [
    ['ioredis', i.redis],
    ['node-redis', await nodeRedisOf(i)],
  ];
}

test('node-redis: a flash key surging in one job costs each instance one GET', async () => {
  const fleet = await instances(3);
  const clients = await Promise.all(fleet.map(nodeRedisOf));
  await plain.set('flash:nr', 'stock:7');
  const before = await redisGets();
  const got = await Promise.all(clients.flatMap((c) => Array.from({ length: 50 }, () => c.get('flash:nr'))));
  for (const v of got) assert.is(v, 'stock:7');
  assert.is((await redisGets()) - before, 3, 'one tracked load per instance');
  for (const i of fleet) assert.ok(i.hk.isHot('flash:nr'));
  const mid = await redisGets();
  await Promise.all(clients.flatMap((c) => Array.from({ length: 50 }, () => c.get('flash:nr'))));
  assert.is((await redisGets()) - mid, 0, 'served locally');
});

test('the read whose count makes the key surge is its hot load (reads one per job, both adapters)', async () => {
  // fraction 1e-9: the level is minAccesses (2) within one slice; a key's first access only enters
  // the sketch, so the 3rd read crosses — or a later one when a slice ends between the reads (a
  // slice's count starts again). Whichever read crosses is the key's tracked load: one GET per
  // read up to it, none after
  const [i] = await instances(1, { fraction: 1e-9 });
  for (const [name, c] of await bothAdapters(i!)) {
    const key = `never:cross-${name}`;
    await plain.set(key, 'c');
    const before = await redisGets();
    let reads = 0;
    while (!i!.hk.isHot(key) && reads < 12) {
      assert.is(await c.get(key), 'c');
      reads++;
    }
    assert.ok(i!.hk.isHot(key), `${name}: surged within 12 reads`);
    assert.ok(reads >= 3, `${name}: surged at read ${reads}, below the level`);
    assert.is((await redisGets()) - before, reads, `${name}: GETs at Redis for ${reads} reads`);
    const mid = await redisGets();
    for (let n = 0; n < 3; n++) assert.is(await c.get(key), 'c');
    assert.is((await redisGets()) - mid, 0, `${name}: served locally after the crossing read`);
  }
});

test('a read while the first GET of a key is unanswered is its tracked load: 2 GETs per instance (both adapters)', async () => {
  // each read in a job of its own, the next one issued before any reply can be read (no I/O runs
  // between jobs): as requests reaching a busy service, faster than Redis answers. The key is not
  // counted here before: its second read, concurrent with the first, surges it
  const [i] = await instances(1);
  for (const [name, c] of await bothAdapters(i!)) {
    const key = `flash:turns-${name}`;
    await plain.set(key, 't');
    const before = await redisGets();
    const reads: Array<Promise<unknown>> = [];
    for (let n = 0; n < 6; n++) {
      reads.push(c.get(key));
      await Promise.resolve(); // the job ends: the read is sent (held-reads.ts)
    }
    for (const v of await Promise.all(reads)) assert.is(v, 't');
    assert.is((await redisGets()) - before, 2, `${name}: the first GET and the tracked load`);
    assert.ok(i!.hk.isHot(key));
    const mid = await redisGets();
    assert.is(await c.get(key), 't');
    assert.is((await redisGets()) - mid, 0, `${name}: served locally`);
  }
});

test('ioredis: the HGET whose count makes the hash surge is its hot load (one HGETALL, tracked)', async () => {
  const [i] = await instances(1, { fraction: 1e-9 });
  const key = 'never:cross-hash';
  await plain.hset(key, { f: '1', g: '2' });
  const calls = async (name: string) =>
    Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(await plain.info('commandstats'))?.[1] ?? 0);
  const [hget0, hgetall0] = [await calls('hget'), await calls('hgetall')];
  for (let n = 0; n < 6; n++) assert.is(await i!.redis.hget(key, 'f'), '1');
  // the 1st read only enters the sketch, the 2nd is below the level (2), the 3rd crosses
  assert.is((await calls('hget')) - hget0, 2, 'HGETs at Redis before the surge');
  assert.is((await calls('hgetall')) - hgetall0, 1, 'the crossing read loads the hash once');
  assert.is(await i!.redis.hget(key, 'g'), '2');
});

test('an acked write by another instance is never followed by a stale read where the key surges', async () => {
  // without Redis tracking: the hub's acknowledged invalidation is all that stands between the
  // readers' local values and a stale read
  // confirmWindows: flash:2 stays below the rule's 400/s, so the hub may never confirm it, and on a busy machine the
  // 40 acked writes can outlast the default two windows, after which nothing is served locally
  const [writer, ...readers] = await instances(3, { confirmWindows: 60 }, { tracking: false });
  await plain.set('flash:2', 'v0');
  for (const r of readers) await burst(r, 'flash:2', 20, 'v0');
  for (const r of readers) assert.ok(r.hk.isHot('flash:2'));
  const hitsBefore = readers.map((r) => r.hk.stats().hits);
  let stale = 0;
  for (let n = 1; n <= 40; n++) {
    await writer!.redis.set('flash:2', `v${n}`); // resolves once the hub acked the invalidation
    for (const r of readers) {
      // one after the other: the first loads, the next are answered locally
      for (let k = 0; k < 3; k++) if ((await r.redis.get('flash:2')) !== `v${n}`) stale++;
    }
  }
  assert.is(stale, 0, 'stale reads after an acked write');
  readers.forEach((r, i) => {
    assert.ok(r.hk.stats().hits > hitsBefore[i]!, 'reads were answered locally between the writes');
  });
});

test('a write by a plain client (no SDK) drops the local value through Redis tracking', async () => {
  // confirmWindows: the local entry would outlive the test: only tracking can drop its value
  const [reader] = await instances(1, { confirmWindows: 60, fraction: 1e-9 });
  await plain.set('never:t', 'old');
  await burst(reader!, 'never:t', 20, 'old');
  const mid = await redisGets();
  await burst(reader!, 'never:t', 20, 'old');
  assert.is((await redisGets()) - mid, 0, 'served locally before the write');
  await plain.set('never:t', 'new');
  await waitFor('the new value', async () => (await reader!.redis.get('never:t')) === 'new', 3000);
  assert.ok(reader!.hk.isHot('never:t'), 'the key itself stays served locally');
  assert.is(reader!.hk.stats().surgeLocalDropped, 0);
});

test('a key the hub never confirms stops being served locally after two windows, and does not come back at once', async () => {
  const [i] = await instances(1, { fraction: 1e-9 });
  await plain.set('never:1', 'x');
  const before0 = i!.hk.stats();
  await burst(i!, 'never:1', 20, 'x');
  assert.ok(i!.hk.isHot('never:1'));
  const promotedAt = performance.now();
  // keeps surging at the level meanwhile: it is the hub's word, not the traffic, that ends it
  let reading = true;
  const reads = (async () => {
    while (reading) {
      await burst(i!, 'never:1', 5, 'x');
      await delay(20);
    }
  })();
  try {
    await waitFor('dropped', () => !i!.hk.isHot('never:1'), 6000);
  } finally {
    reading = false;
    await reads;
  }
  assert.ok(performance.now() - promotedAt >= 1500, 'not before its two windows (2 s) were nearly up');
  const st = i!.hk.stats();
  assert.is(st.surgeLocalPromotions - before0.surgeLocalPromotions, 1);
  assert.ok(st.surgeLocalDropped - before0.surgeLocalDropped >= 1, 'dropped (its lease probe may be too)');
  // surging again within retryMs: not promoted, its reads reach Redis (a job's reads of it as one GET)
  const before = await redisGets();
  await burst(i!, 'never:1', 20, 'x');
  await burst(i!, 'never:1', 20, 'x');
  assert.is((await redisGets()) - before, 2);
  assert.not.ok(i!.hk.isHot('never:1'));
  assert.is(i!.hk.stats().surgeLocalPromotions - before0.surgeLocalPromotions, 1, 'not promoted again');
});

test.run();
