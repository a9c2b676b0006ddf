/**
 * Replica keys through the node-redis adapter, on a real 3-master Redis Cluster
 * (`createCluster`) and on standalone Redis (`createClient`), with a real hub sizing the copies:
 * - a hot key of a `cache: false` rule gets its copies on the two other masters (found by asking
 *   every master which keys it holds), and GETs spread over the three (INFO commandstats);
 * - a write through the wrapper has deleted the copies when it settles: no read after it, on
 *   this instance or another, returns the old value;
 * - an outside write: heard through tracking, the copies go at once; with tracking off, the
 *   copies serve the old value at most `ttlMs`;
 * - standalone and a pool: the copies live on the one server and answer GETs;
 * - a demotion deletes the copies.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient, createClientPool, createCluster } from 'redis';
import type { HotKeyClient } from '@hotkey/sdk';
import { adapterView } from '@hotkey/sdk/internal';
import { replicaStats, withHotKeys, type WithHotKeysOptions } from '@hotkey/sdk/node-redis';
import { hubInProcess } from '../support/e2e.ts';
import { destroyAll } from '../support/node-redis.ts';
import { RedisCluster } from '../support/redis-cluster.ts';
import { RedisServer } from '../support/redis-server.ts';
import { assertGetsSpread } from '../support/replica-spread.ts';
import { delay, waitFor, within } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      // 10 reads/s per node: any read-hot key gets the 3 copies the rule allows
      shop: {
        rules: [{ match: 'item:*', threshold: 50, hotMs: 600_000, cache: false, replicas: { perNodeQps: 10, max: 3 } }],
      },
    },
  },
});

let rc: RedisCluster;
let standalone: RedisServer;
const opened: Array<{ destroy(): void }> = [];
/** A plain connection to one server (a master, or the standalone one), to see what it holds. */
interface Server {
  port: number;
  client: { keys(pattern: string): Promise<string[]> };
}
/** one per master */
let masters: Server[];

type Reader = { get(key: string): Promise<unknown> };

async function connected<
  C extends { connect(): Promise<unknown>; on(e: string, l: () => void): unknown; destroy(): void },
>(c: C): Promise<C> {
  c.on('error', () => {});
  opened.push(c);
  await c.connect();
  return c;
}
const cluster = () => connected(createCluster({ rootNodes: rc.nodes.map((n) => ({ socket: n })) }));
const single = () => connected(createClient({ url: standalone.url }));

/** The replica keys of `key` in Redis now, each with the port of the master holding it. */
async function copiesIn(key: string, where: readonly Server[] = masters): Promise<{ name: string; port: number }[]> {
  const found: { name: string; port: number }[] = [];
  for (const { port, client } of where)
    for (const name of await client.keys(`hkr{*}:${key}`)) found.push({ name, port });
  return found;
}

/** Reads `key` until its HotKeyClient sends GETs over `copies` copies and `want` copies exist in Redis. */
async function heat(hk: HotKeyClient, c: Reader, key: string, want: number, where: readonly Server[] = masters) {
  return waitFor(
    `${key} hot with ${want} copies in Redis`,
    async () => {
      await Promise.all(Array.from({ length: 30 }, () => c.get(key)));
      if (adapterView(hk).replicasOf(key) < 3) return undefined;
      const copies = await copiesIn(key, where);
      return copies.length >= want ? copies : undefined;
    },
    20_000,
    20,
  );
}

test.before(async () => {
  // each server that started is kept for test.after to stop, even when the other failed; a
  // failure is printed (uvu reports a failed before hook only as tests not run)
  const started = await Promise.allSettled([RedisCluster.start({ timeoutMs: 60_000 }), RedisServer.start()]);
  if (started[0].status === 'fulfilled') rc = started[0].value;
  if (started[1].status === 'fulfilled') standalone = started[1].value;
  for (const s of started) {
    if (s.status === 'rejected') {
      console.error('  set-up failed:', s.reason);
      throw s.reason;
    }
  }
  masters = await Promise.all(
    rc.ports.map(async (port) => ({
      port,
      client: await connected(createClient({ socket: { host: '127.0.0.1', port } })),
    })),
  );
});

test.after(async () => {
  destroyAll(opened);
  await delay(20);
  await Promise.all([rc?.stop(), standalone?.stop()]);
});

test('createCluster: the copies of a hot key live on the two other masters, and GETs spread over all three', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await cluster(), hk!);
  const key = 'item:spread';
  await c.set(key, 'v1');
  const copies = await heat(hk!, c, key, 2);
  // KEYS, not EXISTS: a master asked of a key in another's slots answers MOVED
  const holders = await Promise.all(
    masters.map(async ({ port, client }) => ((await client.keys(key)).length ? port : 0)),
  );
  const primary = holders.find((p) => p !== 0);
  const ports = copies.map((copy) => copy.port);
  assert.is(copies.length, 2, `copies ${copies.map((x) => `${x.name}@${x.port}`)}`);
  assert.equal(new Set([primary, ...ports]).size, 3, `the key on ${primary}, its copies on ${ports}`);
  const ttl = Number(rc.cli(copies[0]!.port, 'pttl', copies[0]!.name));
  assert.ok(ttl > 0 && ttl <= 2000, `a copy lives ttlMs (2 s) at most: ${ttl}`);

  const n = 3000;
  await assertGetsSpread(rc, c, key, 'v1', n);
  console.log(`  ${JSON.stringify(replicaStats(c))}`);
  assert.ok(replicaStats(c)!.hits > n * 0.3, 'copies answered reads');
  await e2e.closeClients();
});

test('createCluster: a write through the wrapper has deleted the copies when it settles', async () => {
  const [writerHk, readerHk] = await e2e.sdks(2, () => ({ flushIntervalMs: 20 }));
  // tracking off: a copy is deleted by the write's own path, not by an instance hearing the SET
  const writer = withHotKeys(await cluster(), writerHk!, { tracking: false });
  const reader = withHotKeys(await cluster(), readerHk!, { tracking: false });
  const key = 'item:written';
  await writer.set(key, 'w1');
  await Promise.all([heat(writerHk!, writer, key, 2), heat(readerHk!, reader, key, 2)]);
  for (const [i, write] of [
    (v: string) => writer.set(key, v),
    (v: string) => writer.multi().set(key, v).exec(),
    (v: string) => writer.sendCommand(key, false, ['SET', key, v]),
  ].entries()) {
    await heat(readerHk!, reader, key, 2);
    const value = `w${i + 2}`;
    await write(value);
    assert.equal(await copiesIn(key), [], `write ${i}: no copy left when it settled`);
    const got = await Promise.all(Array.from({ length: 200 }, (_, j) => (j % 2 ? writer : reader).get(key)));
    assert.ok(
      got.every((v) => v === value),
      `write ${i}: every read after it returns ${value}: ${[...new Set(got)]}`,
    );
  }
  assert.ok(replicaStats(writer)!.deleted >= 6, `copies deleted: ${JSON.stringify(replicaStats(writer))}`);
  await e2e.closeClients();
});

test('createCluster: an outside write heard through tracking deletes the copies at once', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  // copies that would live a minute: only tracking can remove them within the deadline below
  const c = withHotKeys(await cluster(), hk!, { replicas: { ttlMs: 60_000 } });
  const plain = await cluster();
  const key = 'item:heard';
  await c.set(key, 'o1');
  await heat(hk!, c, key, 2);
  await plain.set(key, 'o2');
  await waitFor('the copies to be deleted', async () => (await copiesIn(key)).length === 0, 3000);
  const got = await Promise.all(Array.from({ length: 100 }, () => c.get(key)));
  assert.ok(
    got.every((v) => v === 'o2'),
    `${[...new Set(got)]}`,
  );
  await e2e.closeClients();
});

test('createCluster, tracking off: an outside write is served from a copy at most ttlMs', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const ttlMs = 600;
  const options: WithHotKeysOptions = { tracking: false, replicas: { ttlMs } };
  const c = withHotKeys(await cluster(), hk!, options);
  const plain = await cluster();
  const key = 'item:outside';
  await c.set(key, 'x1');
  await heat(hk!, c, key, 2);
  await plain.set(key, 'x2');
  const writtenAt = performance.now();
  let lastStale = -1;
  let stale = 0;
  // reads for 3.2 s: a copy not bounded by ttlMs would serve the old value all along
  while (performance.now() - writtenAt < ttlMs * 2 + 2000) {
    const startedAt = performance.now();
    const got = await Promise.all(Array.from({ length: 20 }, () => c.get(key)));
    if (got.some((v) => v === 'x1')) {
      stale++;
      lastStale = startedAt - writtenAt;
    }
  }
  console.log(`  rounds with a stale read: ${stale}, the last ${lastStale.toFixed(0)} ms after the write`);
  // a fill that read the old value just before the write sets its copy a round trip later, for
  // ttlMs: the margin is that round trip on a loaded machine
  assert.ok(lastStale <= ttlMs + 1000, `a copy served the old value ${lastStale.toFixed(0)} ms after the write`);
  assert.is(await c.get(key), 'x2');
  await e2e.closeClients();
});

test('createClient (standalone): the copies live on the one server and answer GETs; a write deletes them', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  // tracking off: the write's own path, not tracking, must delete the copies
  const c = withHotKeys(await single(), hk!, { tracking: false });
  const server = [{ port: standalone.port, client: await single() }];
  const key = 'item:single';
  await c.set(key, 's1');
  const copies = await heat(hk!, c, key, 2, server);
  assert.is(copies.length, 2);
  const before = replicaStats(c)!.hits;
  const got = await Promise.all(Array.from({ length: 300 }, () => c.get(key)));
  assert.ok(got.every((v) => v === 's1'));
  assert.ok(replicaStats(c)!.hits - before > 100, `copies answered: ${JSON.stringify(replicaStats(c))}`);
  await c.set(key, 's2');
  assert.equal(await copiesIn(key, server), [], 'no copy left when the write settled');
  assert.is(await c.get(key), 's2');
  await e2e.closeClients();
});

test('createClientPool: the clients of a pool share the copies on the one server', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const pool = withHotKeys(createClientPool({ url: standalone.url }), hk!);
  pool.on('error', () => {});
  opened.push(pool);
  await pool.connect();
  const server = [{ port: standalone.port, client: await single() }];
  const key = 'item:pool';
  await pool.set(key, 'p1');
  assert.is((await heat(hk!, pool, key, 2, server)).length, 2);
  const before = replicaStats(pool)!.hits;
  const got = await Promise.all(Array.from({ length: 300 }, () => pool.get(key)));
  assert.ok(got.every((v) => v === 'p1'));
  assert.ok(replicaStats(pool)!.hits - before > 100, `copies answered: ${JSON.stringify(replicaStats(pool))}`);
  await e2e.closeClients();
});

test('createCluster: a demotion deletes the copies', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  // copies that would live a minute: only the demotion can remove them within the deadline below
  const c = withHotKeys(await cluster(), hk!, { replicas: { ttlMs: 60_000 } });
  const key = 'item:demoted';
  await c.set(key, 'd1');
  await heat(hk!, c, key, 2);
  const demoted = new Promise<void>((resolve) => hk!.on('demote', (k) => k === key && resolve()));
  await within('the key to cool and be demoted', demoted, 15_000);
  await waitFor('the copies to be deleted', async () => (await copiesIn(key)).length === 0, 2000);
  await e2e.closeClients();
});

test.run();
