/**
 * Tracked prefixes (`tracking: { prefixes }`) on a real 3-master Redis Cluster, for both adapters
 * (an ioredis `Cluster` and a node-redis `createCluster`, each wrapped): every master gets its
 * broadcast (`hotkey-watch`) connection when the client is ready; a key on any master that surges
 * here after one cold read is loaded from that read's reply (one GET in all, summed over the
 * masters' `INFO commandstats`); an outside write, a slot moved to another master with its key,
 * and a slot moved to a master that joined after the client was ready (whose writes no broadcast
 * of ours hears) each make the surge read the key itself and serve what Redis holds now.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { once } from 'node:events';
import { Cluster, Redis } from 'ioredis';
import { createCluster } from 'redis';
import type { HotKeyClient } from '@hotkey/sdk';
import { hashSlot, withHotKeys } from '@hotkey/sdk/ioredis';
import { withHotKeys as withNodeRedis } from '@hotkey/sdk/node-redis';
import { moveSlot, slotOwner } from '../support/cluster-slots.ts';
import { hubInProcess } from '../support/e2e.ts';
import { burst, keptRead, leaseApplied, type Reader } from '../support/first-reads.ts';
import { connectNoted, destroyAll, keyPerMaster } from '../support/node-redis.ts';
import { RedisCluster } from '../support/redis-cluster.ts';
import { delay, waitFor, within } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: { shop: { rules: [{ match: '*', threshold: 400, windowMs: 1000, hotMs: 60_000, cacheTtlMs: 60_000 }] } },
  },
});

const ADAPTERS = ['ioredis', 'node-redis'] as const;
type Adapter = (typeof ADAPTERS)[number];

let rc: RedisCluster;
/** an unwrapped Cluster client: the outside writer */
let plain: Cluster;
/** a plain connection to each master, to count what reaches it */
const admin = new Map<number, Redis>();
const opened: Array<Cluster | Redis> = [];
const nodeOpened: Array<{ destroy(): void }> = [];

interface Wrapped extends Reader {
  /** the port of the master the client's own slot map names for `slot` */
  ownerOf(slot: number): number | undefined;
}

/** A wrapped Cluster client of `adapter` on `hk`, ready; `prefixes` tracked by broadcast when given. */
async function wrapped(adapter: Adapter, hk: HotKeyClient, prefixes?: string[]): Promise<Wrapped> {
  const options = prefixes === undefined ? {} : { tracking: { prefixes } };
  if (adapter === 'ioredis') {
    const c = withHotKeys(new Cluster(rc.nodes, { redisOptions: { maxRetriesPerRequest: 1 } }), hk, options);
    opened.push(c);
    if (c.status !== 'ready') await within('the ioredis Cluster ready', once(c, 'ready'), 10_000);
    return { get: (key) => c.get(key), ownerOf: (slot) => portOf(c.slots[slot]?.[0]) };
  }
  const c = withNodeRedis(createCluster({ rootNodes: rc.nodes.map((n) => ({ socket: n })) }), hk, options);
  await connectNoted(c, nodeOpened);
  return { get: (key) => c.get(key), ownerOf: (slot) => c.slots[slot]?.master.port };
}

const portOf = (address: string | undefined): number | undefined =>
  address === undefined ? undefined : Number(address.split(':')[1]);

interface Instance {
  hk: HotKeyClient;
  c: Wrapped;
}

/**
 * A HotKeyClient holding its first lease and a wrapped client of `adapter` whose broadcast session
 * is live on every master (`prefixes` null: a client without them).
 */
async function instance(adapter: Adapter, prefixes: string[] | null = ['flash:']): Promise<Instance> {
  // the tests write their keys before: a write's broadcast reaching us after a first read would
  // (rightly) drop that read
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = await wrapped(adapter, hk!, prefixes ?? undefined);
  await leaseApplied(hk!);
  if (prefixes !== null)
    for (const [port, probe] of keysOnMasters(`${prefixes[0]}probe-${adapter}-${++probes}`))
      await keptRead(hk!, c, probe, `${adapter} on ${port}`);
  return { hk: hk!, c };
}
let probes = 0;

/** A key named `<prefix>:<n>` on each master, by the outside writer's slot map: port → key. */
function keysOnMasters(prefix: string): Map<number, string> {
  const slots = plain.slots.map((owners) => ({ master: { port: portOf(owners?.[0]) ?? -1 } }));
  return keyPerMaster({ slots }, rc, prefix);
}

/** Writes `value` to each key through the outside writer. */
async function setAll(keys: Iterable<string>, value: string): Promise<void> {
  for (const key of keys) await plain.set(key, value);
}

/** A plain connection to the master on `port`, counted from now on by `redisGets` and `named`. */
function watchMaster(port: number): void {
  const n = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  opened.push(n);
  admin.set(port, n);
}

/** GETs executed by the masters, summed. */
async function redisGets(): Promise<number> {
  let sum = 0;
  for (const n of admin.values())
    sum += Number(/^cmdstat_get:calls=(\d+)/m.exec(await n.info('commandstats'))?.[1] ?? 0);
  return sum;
}

/** Connections named `name` on each master: port → count. */
async function named(name: string): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (const [port, n] of admin) {
    const list = (await n.client('LIST')) as string;
    counts.set(port, list.split('\n').filter((l) => l.includes(` name=${name} `)).length);
  }
  return counts;
}

/** Each master's count in `now` is its count in `before` plus `more`. */
const grew = (before: Map<number, number>, now: Map<number, number>, more: number): boolean =>
  [...before].every(([port, n]) => now.get(port) === n + more);

test.before(async () => {
  rc = await RedisCluster.start();
  plain = new Cluster(rc.nodes, { redisOptions: { maxRetriesPerRequest: 1 } });
  opened.push(plain);
  await plain.set('warm-up', '1'); // the slot map loaded
  for (const port of rc.ports) watchMaster(port);
});

test.after(async () => {
  for (const c of opened) c.disconnect();
  destroyAll(nodeOpened);
  await delay(20);
  await rc?.stop();
});

test('prefixes open a watch connection on every master when the client is ready; without them none, even after reads', async () => {
  for (const adapter of ADAPTERS) {
    const before = await named('hotkey-watch');
    const [hk] = await e2e.sdks(1);
    await wrapped(adapter, hk!, ['flash:']); // ready, and not a command sent
    await waitFor(
      `${adapter}: a watch connection on each master`,
      async () => grew(before, await named('hotkey-watch'), 1),
      5000,
    );

    const readers = await named('hotkey-tracking');
    const bare = await wrapped(adapter, hk!);
    for (const key of keysOnMasters(`flash:bare-${adapter}`).values()) assert.is(await bare.get(key), null);
    // its reads opened its tracking connections, on every master: the watch ones would be there by now
    await waitFor(
      `${adapter}: tracking connections on each master`,
      async () => grew(readers, await named('hotkey-tracking'), 1),
      5000,
    );
    assert.ok(grew(before, await named('hotkey-watch'), 1), `${adapter}: no watch connection without prefixes`);
  }
});

test('a first read of a key on each master, then a burst that surges it: 1 GET in all (both adapters); 2 outside the prefixes or without them', async () => {
  const keys = new Map(ADAPTERS.map((a) => [a, keysOnMasters(`flash:once-${a}`)]));
  const outside = new Map(ADAPTERS.map((a) => [a, keysOnMasters(`other:once-${a}`)]));
  const bare = new Map(ADAPTERS.map((a) => [a, keysOnMasters(`flash:plain-${a}`)]));
  for (const m of [...keys.values(), ...outside.values(), ...bare.values()]) await setAll(m.values(), 'v');
  for (const adapter of ADAPTERS) {
    const [watched, plainOne] = [await instance(adapter), await instance(adapter, null)];
    const cases: Array<[string, Instance, Map<number, string>, number]> = [
      ['under a prefix', watched, keys.get(adapter)!, 1],
      ['outside the prefixes', watched, outside.get(adapter)!, 2],
      ['no prefixes', plainOne, bare.get(adapter)!, 2],
    ];
    for (const [what, { hk, c }, onMasters, gets] of cases) {
      for (const [port, key] of onMasters) {
        const at = `${adapter}, ${what}, ${key} on ${port}`;
        const [gets0, kept0, used0] = [await redisGets(), hk.stats().recentReads, hk.stats().recentReadsUsed];
        assert.is(await c.get(key), 'v');
        assert.is(hk.stats().recentReads - kept0, gets === 1 ? 1 : 0, `${at}: the first read kept or not`);
        for (const v of await burst(c, key, 50)) assert.is(v, 'v');
        assert.ok(hk.isHot(key), `${at}: surged`);
        assert.is((await redisGets()) - gets0, gets, `${at}: GETs at the masters`);
        assert.is(hk.stats().recentReadsUsed - used0, gets === 1 ? 1 : 0, `${at}: its load took the first read`);
        const mid = await redisGets();
        assert.is(await c.get(key), 'v');
        assert.is((await redisGets()) - mid, 0, `${at}: served locally`);
      }
    }
  }
});

test('a write from outside after the first read: the surge reads the key again and serves the new value (every master, both adapters)', async () => {
  const keys = new Map(ADAPTERS.map((a) => [a, keysOnMasters(`flash:outside-${a}`)]));
  for (const m of keys.values()) await setAll(m.values(), 'old');
  for (const adapter of ADAPTERS) {
    const { hk, c } = await instance(adapter);
    for (const [port, key] of keys.get(adapter)!) {
      const at = `${adapter}, ${key} on ${port}`;
      const [kept, used0] = [hk.stats().recentReads, hk.stats().recentReadsUsed];
      assert.is(await c.get(key), 'old');
      assert.is(hk.stats().recentReads, kept + 1, `${at}: the first read is kept`);
      await plain.set(key, 'new');
      // the master's broadcast of the write drops the kept read
      await waitFor(`${at}: the broadcast invalidation`, () => hk.stats().recentReads === kept, 3000);
      const gets0 = await redisGets();
      for (const v of await burst(c, key, 50)) assert.is(v, 'new', `${at}: no read of the old value`);
      assert.ok(hk.isHot(key));
      assert.is((await redisGets()) - gets0, 1, `${at}: the surge loaded the key itself`);
      assert.is(hk.stats().recentReadsUsed, used0, `${at}: the kept read answered no load`);
    }
  }
});

test('a slot moved to another master with its key after the first read: the surge serves what the new master holds', async () => {
  const [from, to] = rc.ports;
  const key = new Map(ADAPTERS.map((a) => [a, keysOnMasters(`flash:moved-${a}`).get(from!)!]));
  await setAll(key.values(), 'm0');
  for (const adapter of ADAPTERS) {
    const { hk, c } = await instance(adapter);
    const k = key.get(adapter)!;
    const [kept, used0] = [hk.stats().recentReads, hk.stats().recentReadsUsed];
    assert.is(await c.get(k), 'm0');
    assert.is(hk.stats().recentReads, kept + 1, `${adapter}: the first read is kept`);
    await moveSlot(rc, hashSlot(k), to!, rc.ports);
    assert.is(await slotOwner(rc, to!, hashSlot(k)), to, `${adapter}: the slot moved`);
    // MIGRATE deletes the key on the old master: a write its broadcast reports, so the kept read goes
    await waitFor(`${adapter}: the old master's broadcast of the MIGRATE`, () => hk.stats().recentReads === kept, 3000);
    await plain.set(k, 'm1'); // on the new master (the writer follows MOVED)
    const gets0 = await redisGets();
    for (const v of await burst(c, k, 50)) assert.is(v, 'm1', `${adapter}: the new master's value`);
    console.log(`# ${adapter}, slot moved with its key: the surge cost ${(await redisGets()) - gets0} GETs`);
    assert.ok(hk.isHot(k));
    assert.is(hk.stats().recentReadsUsed, used0, `${adapter}: the kept read answered no load`);
    await waitFor(`${adapter}: served as m1`, async () => (await c.get(k)) === 'm1', 3000);
  }
});

test('a slot moved to a master that joined after the client was ready (no broadcast of ours on it), then written there: the kept read is refused, the surge serves the new value', async () => {
  const [from] = rc.ports;
  const key = new Map(ADAPTERS.map((a) => [a, keysOnMasters(`flash:joined-${a}`).get(from!)!])); // none has a value
  const instances = new Map<Adapter, Instance>();
  for (const adapter of ADAPTERS) instances.set(adapter, await instance(adapter));
  const kept0 = new Map(ADAPTERS.map((a) => [a, instances.get(a)!.hk.stats().recentReads]));
  for (const adapter of ADAPTERS) assert.is(await instances.get(adapter)!.c.get(key.get(adapter)!), null);
  for (const adapter of ADAPTERS)
    assert.is(
      instances.get(adapter)!.hk.stats().recentReads,
      kept0.get(adapter)! + 1,
      `${adapter}: the first read (nil) is kept`,
    );

  const joined = await rc.addMaster();
  watchMaster(joined);
  for (const k of key.values()) await moveSlot(rc, hashSlot(k), joined, [...rc.ports, joined]);
  for (const k of key.values()) await plain.set(k, 'late'); // on the new master: no broadcast of ours there
  for (const adapter of ADAPTERS) {
    const { hk, c } = instances.get(adapter)!;
    const k = key.get(adapter)!;
    const used0 = hk.stats().recentReadsUsed;
    // nothing told us: the kept read is still there, and the client's map still names the old master
    assert.is(hk.stats().recentReads, kept0.get(adapter)! + 1, `${adapter}: the kept read is still held`);
    assert.is(c.ownerOf(hashSlot(k)), from, `${adapter}: the client's slot map is stale`);
    // the slot moves left the instance idle for seconds: its lease lapsed (renewed only while it
    // reads), and a key surges locally only under a current one
    await leaseApplied(hk, 5000, `lease-again-${adapter}`);
    // so the surge's load runs on the old master's tracker, whose PTTL is refused with MOVED
    const gets0 = await redisGets();
    for (const v of await burst(c, k, 50)) assert.is(v, 'late', `${adapter}: the value written on the new master`);
    console.log(`# ${adapter}, slot moved to a joined master: the surge cost ${(await redisGets()) - gets0} GETs`);
    assert.ok(hk.isHot(k));
    assert.is(hk.stats().recentReadsUsed, used0, `${adapter}: the kept read answered no load`);
    await waitFor(`${adapter}: the new master's value served`, async () => (await c.get(k)) === 'late', 3000);
  }
});

test.run();
