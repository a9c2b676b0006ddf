/**
 * Sharded counters on a real 3-master Redis Cluster and on a standalone redis-server:
 * - shard names hash where `CLUSTER KEYSLOT` says, onto every master (`CLUSTER SHARDS`);
 * - the explicit counter (take never below zero) under concurrency on the cluster;
 * - zero lost or duplicated increments in the automatic mode: writer processes INCRBY / DECRBY one
 *   key through the wrapper in bursts (promoted write-hot → sharded; cooled → demoted → folded),
 *   one writer is SIGKILLed midway, and the sum of every acknowledged op is compared with Redis.
 *   The killed writer's ops that were sent but not seen acknowledged may or may not have landed:
 *   they only increment, by random amounts up to 10^6, so Redis minus the acknowledged sum must
 *   be the sum of a subset of them — a lost or doubled op (another random amount) cannot hide in
 *   it, and the test checks that its own check rejects such a history.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cluster, Redis } from 'ioredis';
import { counter, hotKeyStats, hashSlot, shardNames, withHotKeys } from '@hotkey/sdk/ioredis';
import { hubInProcess } from '../support/e2e.ts';
import { RedisCluster } from '../support/redis-cluster.ts';
import { RedisServer } from '../support/redis-server.ts';
import { tempDir } from '../support/temp-dir.ts';
import { delay, waitFor, within } from '../support/wait.ts';

const WRITER = fileURLToPath(new URL('../support/counter-writer.ts', import.meta.url));
const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: {
        rules: [
          {
            match: 'cnt:*',
            threshold: 60,
            kind: 'write',
            shards: 8,
            cache: false,
            windowMs: 500,
            demoteWindows: 1,
          },
          { match: 'ctr:*', threshold: 60, kind: 'write', coalesce: true, coalesceMs: 50, cache: false },
        ],
      },
    },
  },
});
let redisCluster: RedisCluster;
let server: RedisServer;
const opened: (Redis | Cluster)[] = [];

test.before(async () => {
  [redisCluster, server] = await Promise.all([RedisCluster.start(), RedisServer.start()]);
});
test.after(async () => {
  for (const c of opened) c.disconnect();
  await redisCluster?.stop();
  await server?.stop();
});

function clusterClient(): Cluster {
  const c = new Cluster(redisCluster.nodes, { redisOptions: { maxRetriesPerRequest: 3 } });
  opened.push(c);
  return c;
}

test('shard names hash where CLUSTER KEYSLOT says, onto every master', async () => {
  const c = clusterClient();
  await waitFor('cluster client ready', () => c.status === 'ready', 10_000);
  const node = c.nodes('master')[0]!;
  const shards = (await node.call('cluster', 'shards')) as unknown[][];
  // CLUSTER SHARDS: [ 'slots', [lo, hi, …], 'nodes', [[…, 'port', p, …]] ] per shard
  const owner = (slot: number): number => {
    for (const s of shards) {
      const slots = s[1] as number[];
      for (let i = 0; i < slots.length; i += 2) {
        if (slot >= slots[i]! && slot <= slots[i + 1]!) {
          const fields = (s[3] as unknown[][])[0]!;
          return Number(fields[fields.indexOf('port') + 1]);
        }
      }
    }
    throw new Error(`slot ${slot} unowned`);
  };
  for (const [key, n] of [
    ['item:stock:1001', 20],
    ['likes:{post9}', 3],
    ['é:ü', 5],
  ] as const) {
    const names = shardNames(key, n);
    for (const name of names) assert.is(hashSlot(name), Number(await node.call('cluster', 'keyslot', name)), name);
    const masters = new Set(names.map((name) => owner(hashSlot(name))));
    assert.is(masters.size, Math.min(3, n), `${key} × ${n}: on ${masters.size} masters`);
  }
  const three = shardNames('stock:x', 3).map((name) => owner(hashSlot(name)));
  assert.is(new Set(three).size, 3, '3 shards on 3 masters: one each');
});

test('explicit counter on the cluster: concurrent takes never go below zero or oversell', async () => {
  const c = clusterClient();
  const stock = counter(c, 'item:stock:1001', { shards: 20 });
  await stock.fill(500);
  const taken = await Promise.all(Array.from({ length: 700 }, (_, i) => stock.take(1 + (i % 2))));
  let sold = taken.reduce((a, b) => a + b, 0);
  // a take may come up short while another's give-back is still on its way: never an oversell
  assert.ok(sold <= 500, `sold ${sold} of 500`);
  assert.is(await stock.total(), 500 - sold, 'nothing lost or doubled');
  for (const name of [...stock.shards, stock.key]) assert.ok(Number((await c.get(name)) ?? 0) >= 0, name);
  while ((await stock.take(1)) === 1) sold++;
  assert.is(sold, 500, 'what is left can be taken, to the last unit');
  assert.is(await stock.total(), 0);
});

/** every subset sum of `values` (few values) */
function subsetSums(values: readonly number[]): Set<number> {
  let sums = new Set([0]);
  for (const v of values) sums = new Set([...sums, ...[...sums].map((s) => s + v)]);
  return sums;
}

interface Ledger {
  acked: number[];
  unacked: number[];
}

function readLedger(file: string): Ledger {
  const sent = new Map<string, number>();
  const acked: number[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [kind, id, delta] = line.split(' ');
    if (kind === 'I') sent.set(id!, Number(delta));
    else if (kind === 'A' && sent.has(id!)) {
      acked.push(sent.get(id!)!);
      sent.delete(id!);
    }
  }
  return { acked, unacked: [...sent.values()] };
}

async function zeroLoss(label: string, spec: object, plain: Redis | Cluster, read: Redis | Cluster): Promise<void> {
  const key = `cnt:${label}`;
  await plain.set(key, 0);
  const dir = tempDir('hotkey-counter-');
  // the test's own instance reads through the wrapper and folds at demotion, like any other
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const wrapped = withHotKeys(read, hk!, { tracking: false });
  const logs = Array.from({ length: 4 }, (_, i) => join(dir, `writer-${i}.log`));
  const children: ChildProcess[] = logs.map((log, i) =>
    spawn(
      process.execPath,
      [
        '--conditions=@hotkey/source',
        '--import',
        'tsx',
        WRITER,
        e2e.hub.url,
        JSON.stringify(spec),
        key,
        log,
        '8000',
        i === 0 ? '1' : '0',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    ),
  );
  const errors = children.map((child) => {
    let text = '';
    child.stderr!.on('data', (d: Buffer) => {
      if (text.length < 4000) text += d;
    });
    return () => text;
  });
  const exited = children.map((child) => once(child, 'exit'));
  const shards = shardNames(key, 8);
  let shardedSeen = false;
  let sumReads = 0;
  const started = Date.now();
  const running = () => children.some((child) => child.exitCode === null && child.signalCode === null);
  const lines = (file: string) => {
    try {
      return readFileSync(file, 'utf8').split('\n').length;
    } catch {
      return 0; // not started yet
    }
  };
  while (running() && Date.now() - started < 30_000) {
    if (!shardedSeen && (await plain.exists(...shards.slice(0, 1))) + (await plain.exists(shards[7]!)) > 0)
      shardedSeen = true;
    if (hk!.hotKind(key) === 'write') {
      await wrapped.get(key); // GET of a sharded key: the sum
      sumReads++;
    }
    // killed in its second burst, mid-stream: once it logged a good number of ops
    if (children[0]!.exitCode === null && children[0]!.signalCode === null && lines(logs[0]!) > 600)
      children[0]!.kill('SIGKILL');
    await delay(20);
  }
  const codes = await within('writers to end', Promise.all(exited), 20_000);
  assert.equal(
    codes.map(([code, signal]) => signal ?? code),
    ['SIGKILL', 0, 0, 0],
    errors.map((text) => text()).join('\n'),
  );
  assert.ok(
    shardedSeen,
    `the key went to shards while hot (${sumReads} summed GETs, ${JSON.stringify(hotKeyStats(wrapped))}, ${logs.map(lines)} lines)`,
  );
  assert.ok(sumReads > 0, 'GETs summed the shards');
  // cool: demoted everywhere, folded back into the key
  await waitFor('demoted', () => hk!.hotKind(key) === undefined, 10_000);
  const leftovers = async () =>
    (await Promise.all(shards.flatMap((s) => [plain.exists(s), plain.exists(`${s}:hk:xfer`)]))).reduce(
      (a, b) => a + b,
      0,
    );
  await waitFor('shards folded into the key', async () => (await leftovers()) === 0, 10_000);
  const final = Number(await plain.get(key));
  const ledgers = logs.map(readLedger);
  const acked = ledgers.flatMap((l) => l.acked);
  const expected = acked.reduce((a, b) => a + b, 0);
  const ambiguous = ledgers[0]!.unacked;
  assert.ok(
    ledgers.slice(1).every((l) => l.unacked.length === 0),
    'writers that ended saw every reply',
  );
  assert.ok(ledgers[0]!.acked.length > 0, 'the killed writer had acknowledged ops');
  assert.ok(ambiguous.length <= 4, `${ambiguous.length} ops in flight at the kill`);
  const sums = subsetSums(ambiguous);
  const check = (total: number) => sums.has(total - expected);
  assert.ok(
    check(final),
    `${label}: Redis ${final}, acknowledged ${expected} (diff ${final - expected}), in flight at the kill ${JSON.stringify(ambiguous)}`,
  );
  // the check can fail: a history with one acknowledged op lost, or one doubled, is rejected
  const some = acked[Math.floor(acked.length / 2)]!;
  assert.not.ok(check(final - some), 'a lost op is caught');
  assert.not.ok(check(final + some), 'a doubled op is caught');
  console.log(
    `# ${label}: ${acked.length} acknowledged ops (sum ${expected}), ${ambiguous.length} in flight at the kill, Redis ${final}; ${sumReads} summed GETs`,
  );
}

test('zero lost increments on the cluster: 4 writer processes, one SIGKILLed, shards and folds under load', async () => {
  await zeroLoss('cluster', { nodes: redisCluster.nodes }, clusterClient(), clusterClient());
});

test('zero lost increments on standalone Redis, same history', async () => {
  const plain = new Redis(server.port, '127.0.0.1');
  const read = new Redis(server.port, '127.0.0.1');
  opened.push(plain, read);
  await zeroLoss('standalone', { port: server.port }, plain, read);
});

/** INCR and INCRBY calls summed over the cluster's masters (INFO commandstats of each). */
async function incrCallsAll(): Promise<number> {
  let sum = 0;
  for (const port of redisCluster.ports) {
    const node = new Redis(port, '127.0.0.1');
    try {
      const info = await node.info('commandstats');
      for (const name of ['incr', 'incrby'])
        sum += Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
    } finally {
      node.disconnect();
    }
  }
  return sum;
}

test('coalescing on a 3-master Cluster: a write-hot key per master, few INCRBYs, every increment once, one serial history each', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const cluster = withHotKeys(new Cluster(redisCluster.nodes), hk!, { tracking: false });
  opened.push(cluster);
  const keys = ['ctr:{a}', 'ctr:{b}', 'ctr:{c}'];
  for (let i = 0; i < 100; i++) await Promise.all(keys.map((k) => cluster.incr(k)));
  const owners = new Set(keys.map((k) => cluster.slots[hashSlot(k)]?.[0]));
  assert.is(owners.size, 3, 'the three keys live on three masters');
  await waitFor('all three write-hot', () => keys.every((k) => hk!.hotKind(k) === 'write'), 5000);
  const base = await Promise.all(keys.map(async (k) => Number(await cluster.get(k))));
  const before = await incrCallsAll();
  const replies = keys.map(() => [] as number[]);
  for (let round = 0; round < 10; round++)
    await Promise.all(
      keys.flatMap((k, j) => Array.from({ length: 100 }, () => cluster.incr(k).then((v) => void replies[j]!.push(v)))),
    );
  const commands = (await incrCallsAll()) - before;
  for (const [j, k] of keys.entries()) {
    assert.is(Number(await cluster.get(k)), base[j]! + 1000, `${k}: every increment landed once`);
    assert.is(new Set(replies[j]).size, 1000, `${k}: no two callers saw the same value`);
    assert.is(Math.max(...replies[j]!), base[j]! + 1000);
  }
  assert.ok(commands <= 60, `${commands} INCR/INCRBY commands for 3,000 increments`);
  assert.ok(hotKeyStats(cluster).writeHot.coalescedIncrements >= 3000);
});

test.run();
