/**
 * Replica keys of a read-hot key that is not cached locally (`cache: false`), on a real 3-master
 * Redis Cluster and on standalone Redis:
 * - hash-slots.ts agrees with CLUSTER KEYSLOT; the copies land on the two other masters (CLUSTER SHARDS);
 * - GETs spread over the three masters (INFO commandstats per node);
 * - a staleness checker: wrapper writes from this process, reads from two reader processes (two
 *   instances each): no read that starts after a write settled returns an older version; then
 *   writes by a plain client: no read older than the documented bound (the copies' ttlMs);
 * - a demotion deletes the copies; the wrapper's per-key rate limit rejects with HK_ERR_RATE_LIMITED.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Cluster, Redis } from 'ioredis';
import { ErrorCode, type HotKeyClient } from '@hotkey/sdk';
import { adapterView } from '@hotkey/sdk/internal';
import { hashSlot, REPLICA_TTL_MS, replicaStats, withHotKeys } from '@hotkey/sdk/ioredis';
import { hubInProcess } from '../support/e2e.ts';
import { clientsOf, RedisCluster } from '../support/redis-cluster.ts';
import { RedisServer } from '../support/redis-server.ts';
import { assertGetsSpread } from '../support/replica-spread.ts';
import { summary } from '../support/staleness.ts';
import { delay, waitFor, within } from '../support/wait.ts';
import { hostNow } from '../support/host-clock.ts';

const READER = fileURLToPath(new URL('../support/replica-reader.ts', import.meta.url));
const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: {
        rules: [
          // 10 reads/s per node: any read-hot key gets the 3 copies the rule allows
          { match: 'item:*', threshold: 50, hotMs: 600_000, cache: false, replicas: { perNodeQps: 10, max: 3 } },
          { match: 'api:*', threshold: 1_000_000, limit: 20 },
        ],
      },
    },
  },
});

let rc: RedisCluster;
let standalone: RedisServer;
const opened: (Cluster | Redis)[] = [];
const children: ChildProcess[] = [];

const { cluster, node } = clientsOf(() => rc, opened);
function single(): Redis {
  const c = new Redis({ host: '127.0.0.1', port: standalone.port, maxRetriesPerRequest: 1 });
  opened.push(c);
  return c;
}

/** port of the master serving each slot, from CLUSTER SHARDS (Redis 7) */
async function slotOwners(c: Cluster): Promise<Map<number, number>> {
  const shards = (await c.cluster('SHARDS')) as unknown[][];
  const owner = new Map<number, number>();
  for (const shard of shards) {
    const f = new Map<string, unknown>();
    for (let i = 0; i < shard.length; i += 2) f.set(String(shard[i]), shard[i + 1]);
    const nodes = f.get('nodes') as unknown[][];
    const master = nodes
      .map((n) => {
        const m = new Map<string, unknown>();
        for (let i = 0; i < n.length; i += 2) m.set(String(n[i]), n[i + 1]);
        return m;
      })
      .find((m) => m.get('role') === 'master');
    const ranges = f.get('slots') as number[];
    for (let i = 0; i < ranges.length; i += 2)
      for (let s = Number(ranges[i]); s <= Number(ranges[i + 1]); s++) owner.set(s, Number(master!.get('port')));
  }
  return owner;
}

/** The replica keys matching `pattern` in Redis now, each with the port of the master holding it. */
async function copiesIn(pattern: string): Promise<{ name: string; port: number }[]> {
  const found: { name: string; port: number }[] = [];
  for (const port of rc.ports) for (const name of await node(port).keys(pattern)) found.push({ name, port });
  return found;
}

/**
 * Reads `key` through `redis` until both of its copies exist in Redis, and returns them. The
 * wrapper's `fills` count is no measure of that: one copy can be filled twice (a GET that missed
 * it before the first fill's SET landed fills it again; NX keeps the first) while the other is not
 * yet, and a copy lives only `ttlMs`. Under load one round of reads can take a second or more.
 */
async function bothCopies(
  redis: Redis | Cluster,
  key: string,
  pattern: string,
): Promise<{ name: string; port: number }[]> {
  let seen: { name: string; port: number }[] = [];
  try {
    return await waitFor(
      `both copies of ${key} in Redis`,
      async () => {
        await Promise.all(Array.from({ length: 30 }, () => redis.get(key)));
        seen = await copiesIn(pattern);
        return seen.length >= 2 ? seen : undefined;
      },
      15_000,
      20,
    );
  } catch (err) {
    throw new Error(
      `${(err as Error).message}; copies seen: ${seen.map((c) => c.name)}; ${JSON.stringify(replicaStats(redis))}`,
    );
  }
}

/** Reads `key` through `redis` until its HotKeyClient sends GETs over `copies` copies. */
async function heat(hk: HotKeyClient, redis: Redis | Cluster, key: string, copies: number): Promise<void> {
  await waitFor(
    `${key} hot with ${copies} copies`,
    async () => {
      await Promise.all(Array.from({ length: 20 }, () => redis.get(key)));
      return adapterView(hk).replicasOf(key) >= copies;
    },
    15_000,
    20,
  );
}

test.before(async () => {
  [rc, standalone] = await Promise.all([RedisCluster.start(), RedisServer.start()]);
});

test.after(async () => {
  for (const child of children) child.kill('SIGKILL');
  for (const c of opened) c.disconnect();
  await delay(20);
  await Promise.all([rc?.stop(), standalone?.stop()]);
});

test('hashSlot agrees with CLUSTER KEYSLOT, hash tags included', async () => {
  const c = cluster();
  const keys = ['foo', 'somekey', '{user1000}.following', 'a{}b{c}', 'x{y}z', '{}', 'ключ:ü', 'hkr{12.1.0}:item:1'];
  for (let i = 0; i < 60; i++) keys.push(`k:${i}:${Math.random().toString(36).slice(2)}`);
  for (const key of keys) assert.is(hashSlot(key), Number(await c.cluster('KEYSLOT', key)), key);
});

test('the copies of a hot key live on the two other masters, and GETs spread over all three', async () => {
  const hk = (await e2e.sdks(1))[0]!;
  const c = withHotKeys(cluster(), hk);
  const key = 'item:spread';
  await c.set(key, 'v1');
  await heat(hk, c, key, 3);
  // every replica key in the Cluster: a copy of this key and no other
  const copies = await bothCopies(c, key, 'hkr{*');
  // a short TTL, renewed by refills (read first: the copy may expire while the rest is checked)
  const ttl = await node(copies[0]!.port).pttl(copies[0]!.name);
  const owners = await slotOwners(c);
  const primaryPort = owners.get(hashSlot(key))!;
  for (const { name, port } of copies) {
    assert.ok(name.endsWith(`:${key}`), name);
    assert.is(owners.get(Number(await c.cluster('KEYSLOT', name))), port, `${name} served by ${port}`);
  }
  const copyPorts = copies.map((copy) => copy.port);
  assert.is(copyPorts.length, 2, `copies on ${copyPorts}`);
  assert.equal(new Set([primaryPort, ...copyPorts]).size, 3, 'the key and its two copies on three masters');
  assert.ok(ttl > 0 && ttl <= REPLICA_TTL_MS, `copy ttl ${ttl}`);

  await assertGetsSpread(rc, c, key, 'v1');
  await e2e.closeClients();
});

interface Write {
  v: number;
  ackAt: number;
  kind: 'wrapper' | 'outside';
}

/** One reader process; resolves once its instances read through `copies` copies. */
async function reader(cfg: object): Promise<{
  child: ChildProcess;
  done: Promise<{ starts: number[]; versions: number[]; stats: Record<string, number> }>;
}> {
  const child = fork(READER, [], {
    env: { ...process.env, RR_CONFIG: JSON.stringify(cfg) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  const done = new Promise<{ starts: number[]; versions: number[]; stats: Record<string, number> }>((resolve) =>
    child.on('message', (m: { type: string }) => {
      if (m.type === 'done') resolve(m as never);
    }),
  );
  await within(
    'a reader process to be ready',
    new Promise<void>((resolve, reject) =>
      child.on('message', (m: { type: string; message?: string }) => {
        if (m.type === 'ready') resolve();
        if (m.type === 'error') reject(new Error(m.message));
      }),
    ),
    60_000,
  );
  return { child, done };
}

async function checker(deployment: 'cluster' | 'standalone'): Promise<void> {
  const key = `item:checked:${deployment}`;
  const make = deployment === 'cluster' ? cluster : single;
  const target = deployment === 'cluster' ? { nodes: rc.nodes } : { port: standalone.port };
  const hk = (await e2e.sdks(1))[0]!;
  const writer = withHotKeys(make(), hk);
  const plain = make();
  let v = 1;
  await writer.set(key, `v${v}`);
  const now = hostNow;
  const writes: Write[] = [{ v, ackAt: now(), kind: 'wrapper' }];
  const copies = 3;
  const readers = await Promise.all(
    [0, 1].map(() => reader({ hub: e2e.hub.url, ...target, key, instances: 2, loops: 2, copies })),
  );
  await waitFor('the writer to see the copies', () => adapterView(hk).replicasOf(key) >= copies, 10_000);
  // wrapper writes: 4 s, one every 25 ms
  const wrapperUntil = performance.now() + 4000;
  while (performance.now() < wrapperUntil) {
    v++;
    await writer.set(key, `v${v}`);
    writes.push({ v, ackAt: now(), kind: 'wrapper' });
    await delay(25);
  }
  // writes by a client without the SDK: 3 s, one every 150 ms
  const outsideUntil = performance.now() + 3000;
  while (performance.now() < outsideUntil) {
    v++;
    await plain.set(key, `v${v}`);
    writes.push({ v, ackAt: now(), kind: 'outside' });
    await delay(150);
  }
  for (const r of readers) r.child.send({ type: 'stop' });
  const results = await within('the readers to report', Promise.all(readers.map((r) => r.done)), 20_000);

  const ackOf = new Map(writes.map((w) => [w.v, w]));
  let reads = 0;
  let staleAfterWrapper = 0;
  const outsideAges: number[] = [];
  const stats: Record<string, number> = {};
  for (const r of results) {
    for (const [k, n] of Object.entries(r.stats)) stats[k] = (stats[k] ?? 0) + n;
    for (let i = 0; i < r.starts.length; i++) {
      reads++;
      // the first write newer than what the read returned, if it settled before the read began
      const next = ackOf.get(r.versions[i]! + 1);
      if (next === undefined || next.ackAt >= r.starts[i]!) continue;
      if (next.kind === 'wrapper') staleAfterWrapper++;
      else outsideAges.push(r.starts[i]! - next.ackAt);
    }
  }
  const s = summary(outsideAges);
  console.log(
    `  ${deployment}: ${reads} reads, ${writes.length} writes; stale after wrapper writes: ${staleAfterWrapper};` +
      ` after outside writes: ${outsideAges.length} reads, age p50 ${s.p50?.toFixed(1)} / p99 ${s.p99?.toFixed(1)} / max ${s.max?.toFixed(1)} ms;` +
      ` replica hits ${stats.hits}, misses ${stats.misses}, fills ${stats.fills}, voided ${stats.voided}, deleted ${stats.deleted}`,
  );
  assert.ok(reads > 2000, `reads ${reads}`);
  assert.ok((stats.hits ?? 0) > reads * 0.3, `replica hits ${stats.hits} of ${reads}`);
  assert.is(staleAfterWrapper, 0, 'no read after a settled wrapper write returns an older version');
  assert.ok(outsideAges.length === 0 || s.max <= REPLICA_TTL_MS + 250, `outside-write staleness max ${s.max} ms`);
  await e2e.closeClients();
}

test('staleness checker on the Cluster: 0 stale replica reads after wrapper writes, outside writes within ttlMs', () =>
  checker('cluster'));

test('staleness checker on standalone Redis', () => checker('standalone'));

test('a demotion deletes the copies', async () => {
  const hk = (await e2e.sdks(1))[0]!;
  const c = withHotKeys(cluster(), hk, { replicas: { ttlMs: 60_000 } });
  const key = 'item:demoted';
  await c.set(key, 'x');
  await heat(hk, c, key, 3);
  assert.is((await bothCopies(c, key, `hkr{*}:${key}`)).length, 2);
  const demoted = new Promise<void>((resolve) => hk.on('demote', (k) => k === key && resolve()));
  await within('the key to cool and be demoted', demoted, 15_000);
  await waitFor('the copies to be deleted', async () => (await copiesIn(`hkr{*}:${key}`)).length === 0, 2000);
  await e2e.closeClients();
});

test('the wrapper rejects a limited key past its share with HK_ERR_RATE_LIMITED, unsent', async () => {
  const hk = (await e2e.sdks(1))[0]!;
  const c = withHotKeys(single(), hk);
  await c.set('other', '1'); // not limited
  const results = await Promise.allSettled(Array.from({ length: 100 }, () => c.get('api:quota')));
  const refused = results.filter((r) => r.status === 'rejected');
  assert.ok(refused.length >= 90, `refused ${refused.length} of 100 (limit 20/s)`);
  for (const r of refused)
    assert.is(((r as PromiseRejectedResult).reason as { code: string }).code, ErrorCode.RateLimited);
  assert.is(hk.stats().rateLimited, refused.length);
  assert.is(await c.get('other'), '1');
  await e2e.closeClients();
});

test.run();
