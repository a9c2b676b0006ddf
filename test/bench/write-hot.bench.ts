/**
 * Benchmark 15 — keys Redis must still serve, and a frozen Redis node:
 * 1. One write-hot stock key decremented from 8 connections on a real 3-master Redis Cluster:
 *    the busiest master's share of all commands and the decrements per second, plain DECR on the
 *    one key (baseline) vs `counter(…, { shards: 20 }).take(1)`; units lost or doubled (Redis
 *    against the acknowledged decrements; must be 0).
 * 2. INCR coalescing on one write-hot key (standalone redis-server, real hub): Redis INCR/INCRBY
 *    commands per 1000 increments and the mean latency per increment, plain INCR (baseline) vs a
 *    rule with `coalesce: true` (100 ms window); increments arrive at a steady 2000/s.
 * 3. A flash sale while Redis is frozen (SIGSTOP for 5 s): how long a non-hot read takes to fail
 *    (or answer) — queued on the dead connection without a breaker (baseline) vs failing fast
 *    with the breaker — and the share of a hot key's reads that failed or stalled once its cached
 *    value expired (without vs with the breaker and stale-if-error).
 */
import { Cluster, Redis } from 'ioredis';
import { HotKeyClient } from '@hotkey/sdk';
import { counter, withHotKeys } from '@hotkey/sdk/ioredis';
import { startHubInProcess } from '../support/hub-in-process.ts';
import { benchMain, type BenchRow } from './harness.ts';
import { RedisServer } from '../support/redis-server.ts';
import { RedisCluster } from '../support/redis-cluster.ts';
import { delay, waitFor } from '../support/wait.ts';

const CONNECTIONS = 8;
/** in flight per connection */
const DEPTH = 4;

/** every command each master served so far (INFO commandstats, summed) */
async function commandsPerMaster(ports: readonly number[]): Promise<number[]> {
  return Promise.all(
    ports.map(async (port) => {
      const r = new Redis(port, '127.0.0.1');
      const info = await r.info('commandstats');
      r.disconnect();
      let sum = 0;
      for (const m of info.matchAll(/calls=(\d+)/g)) sum += Number(m[1]);
      return sum;
    }),
  );
}

interface StockRun {
  share: number;
  opsPerSec: number;
  lost: number;
}

async function stock(cluster: RedisCluster, sharded: boolean, seconds: number): Promise<StockRun> {
  const key = sharded ? 'item:stock:sharded' : 'item:stock:plain';
  const clients = Array.from({ length: CONNECTIONS }, () => new Cluster(cluster.nodes));
  const initial = 1_000_000_000;
  const shardedCounter = counter(clients[0]!, key, { shards: 20 });
  if (sharded) await shardedCounter.fill(initial);
  else await clients[0]!.set(key, initial);
  const before = await commandsPerMaster(cluster.ports);
  let acked = 0;
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    clients.flatMap((c) => {
      const stockOf = counter(c, key, { shards: 20 });
      return Array.from({ length: DEPTH }, async () => {
        while (performance.now() < end) {
          if (sharded) {
            const took = await stockOf.take(1); // not `acked += await …`: that reads acked before the await
            acked += took;
          } else {
            await c.decr(key);
            acked++;
          }
        }
      });
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const after = await commandsPerMaster(cluster.ports);
  const delta = after.map((a, i) => a - before[i]!);
  const total = sharded ? await shardedCounter.total() : Number(await clients[0]!.get(key));
  for (const c of clients) c.disconnect();
  return {
    share: Math.max(...delta) / delta.reduce((a, b) => a + b, 0),
    opsPerSec: acked / elapsed,
    lost: Math.abs(initial - acked - total),
  };
}

interface IncrRun {
  perThousand: number;
  meanMs: number;
}

async function increments(plain: Redis, incr: () => Promise<unknown>, seconds: number): Promise<IncrRun> {
  const calls = async () => {
    const info = await plain.info('commandstats');
    const of = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
    return of('incr') + of('incrby');
  };
  const before = await calls();
  const rate = 2000;
  const latencies: number[] = [];
  const pending: Promise<unknown>[] = [];
  const started = performance.now();
  let sent = 0;
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) * rate) / 1000);
    for (; sent < due; sent++) {
      const t0 = performance.now();
      pending.push(incr().then(() => latencies.push(performance.now() - t0)));
    }
    await delay(5);
  }
  await Promise.all(pending);
  const commands = (await calls()) - before;
  return {
    perThousand: (commands * 1000) / latencies.length,
    meanMs: latencies.reduce((a, b) => a + b, 0) / latencies.length,
  };
}

async function coalescing(seconds: number): Promise<IncrRun[]> {
  const server = await RedisServer.start();
  const hub = await startHubInProcess({
    config: { apps: { bench: { rules: [{ match: 'ctr:*', threshold: 1000, kind: 'write', coalesce: true }] } } },
  });
  const hk = new HotKeyClient({ app: 'bench', hubs: hub.url, flushIntervalMs: 20 });
  try {
    await hk.ready({ signal: AbortSignal.timeout(5000) });
    const plain = new Redis(server.port, '127.0.0.1');
    const wrapped = withHotKeys(new Redis(server.port, '127.0.0.1'), hk, {
      tracking: false,
      awaitInvalidation: false,
    });
    // ours first, right after the promotion (the key stays hot on its own increments)
    if (!hub.core.promote('bench', 'ctr:1')) throw new Error('cannot promote ctr:1');
    await waitFor('ctr:1 write-hot', () => hk.hotKind('ctr:1') === 'write', 5000);
    const ours = await increments(plain, () => wrapped.incr('ctr:1'), seconds);
    const baseline = await increments(plain, () => plain.incr('ctr:plain'), seconds);
    plain.disconnect();
    wrapped.disconnect();
    return [ours, baseline];
  } finally {
    await hk.close();
    await hub.close();
    await server.stop();
  }
}

/** While Redis is frozen: ms each non-hot read took to settle, and the hot key's reads that failed. */
interface FrozenRun {
  cold: number[];
  /** reads of the hot key (its cached value expires 1 s into the outage) */
  hotReads: number;
  /** of those, rejected or slower than 100 ms (a stall a service would time out on) */
  hotFailed: number;
}

/**
 * `protect`: the breaker and stale-if-error (the rule's default `staleIfErrorMs`); without it,
 * neither (`staleIfErrorMs: 0`): a client with no protection from a frozen node. 200 non-hot and 200 hot reads a second.
 */
async function frozen(protect: boolean, frozenMs: number): Promise<FrozenRun> {
  const server = await RedisServer.start();
  const rule = { match: 'hot:*', threshold: 100, cacheTtlMs: 1000, ...(protect ? {} : { staleIfErrorMs: 0 }) };
  const hub = await startHubInProcess({ config: { apps: { bench: { rules: [rule] } } } });
  const hk = new HotKeyClient({ app: 'bench', hubs: hub.url, flushIntervalMs: 20 });
  try {
    await hk.ready({ signal: AbortSignal.timeout(5000) });
    const redis = withHotKeys(new Redis(server.port, '127.0.0.1'), hk, { tracking: false, breaker: protect });
    await redis.set('hot:sale', 'on');
    await waitFor(
      'hot:sale hot and cached',
      async () => {
        await Promise.all(Array.from({ length: 50 }, () => redis.get('hot:sale')));
        return hk.isHot('hot:sale') && hk.stats().hits > 0;
      },
      10_000,
    );
    const run: FrozenRun = { cold: [], hotReads: 0, hotFailed: 0 };
    const reads: Promise<unknown>[] = [];
    server.pause();
    const started = performance.now();
    let i = 0;
    while (performance.now() - started < frozenMs) {
      const t0 = performance.now();
      const done = () => run.cold.push(performance.now() - t0);
      reads.push(redis.get(`cold:${i++}`).then(done, done));
      run.hotReads++;
      reads.push(
        redis.get('hot:sale').then(
          () => {
            if (performance.now() - t0 > 100) run.hotFailed++;
          },
          () => run.hotFailed++,
        ),
      );
      await delay(5);
    }
    server.resume();
    await Promise.all(reads);
    redis.disconnect();
    return run;
  } finally {
    server.resume();
    await hk.close();
    await hub.close();
    await server.stop();
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
}

benchMain(async ({ quick }) => {
  const rows: BenchRow[] = [];
  const seconds = quick ? 1 : 5;
  const cluster = await RedisCluster.start();
  try {
    const plain = await stock(cluster, false, seconds);
    const sharded = await stock(cluster, true, seconds);
    rows.push(
      {
        bench: '15 write-hot',
        metric: "stock key, 8 connections: busiest master's share of commands (20 shards vs one key)",
        ours: sharded.share * 100,
        baseline: plain.share * 100,
        unit: '%',
        better: 'lower',
        target: { reach: 40 },
        note: '3-master Redis Cluster; ours: counter().take(1), baseline: DECR',
      },
      {
        bench: '15 write-hot',
        metric: 'stock key, 8 connections: decrements per second',
        ours: sharded.opsPerSec,
        baseline: plain.opsPerSec,
        unit: 'ops/s',
        better: 'higher',
        note: 'a take is one EVALSHA (up to 21 when shards run short); one client process',
      },
      {
        bench: '15 write-hot',
        metric: 'stock key: units lost or doubled (Redis vs acknowledged)',
        ours: sharded.lost,
        baseline: plain.lost,
        unit: 'units',
        better: 'lower',
        target: { reach: 0 },
      },
    );
  } finally {
    await cluster.stop();
  }
  const [ours, baseline] = await coalescing(quick ? 1 : 3);
  rows.push(
    {
      bench: '15 write-hot',
      metric: 'INCR coalescing: Redis commands per 1000 increments (2000 increments/s)',
      ours: ours!.perThousand,
      baseline: baseline!.perThousand,
      unit: 'cmds',
      better: 'lower',
    },
    {
      bench: '15 write-hot',
      metric: 'INCR coalescing: mean latency per increment (added: ours − baseline)',
      ours: ours!.meanMs,
      baseline: baseline!.meanMs,
      unit: 'ms',
      better: 'lower',
      note: `added ${(ours!.meanMs - baseline!.meanMs).toFixed(1)} ms; 100 ms window`,
    },
  );
  const frozenMs = quick ? 2000 : 5000;
  const guarded = await frozen(true, frozenMs);
  const unguarded = await frozen(false, frozenMs);
  rows.push(
    {
      bench: '15 breaker',
      metric: `Redis SIGSTOP ${frozenMs / 1000} s: non-hot read time to fail (or answer), p50`,
      ours: percentile(guarded.cold, 0.5),
      baseline: percentile(unguarded.cold, 0.5),
      unit: 'ms',
      better: 'lower',
      note: 'ours: breaker (5 timeouts of 1 s open it); baseline: queued until Redis resumes',
    },
    {
      bench: '15 breaker',
      metric: `Redis SIGSTOP ${frozenMs / 1000} s: non-hot reads settled within 50 ms`,
      ours: (guarded.cold.filter((ms) => ms < 50).length * 100) / guarded.cold.length,
      baseline: (unguarded.cold.filter((ms) => ms < 50).length * 100) / unguarded.cold.length,
      unit: '%',
      better: 'higher',
    },
    {
      bench: '15 breaker',
      metric: `Redis SIGSTOP ${frozenMs / 1000} s: hot-key reads failed or > 100 ms (cacheTtlMs 1 s)`,
      ours: (guarded.hotFailed * 100) / guarded.hotReads,
      baseline: (unguarded.hotFailed * 100) / unguarded.hotReads,
      unit: '%',
      better: 'lower',
      note: `ours: breaker + stale-if-error (staleIfErrorMs 3000: the last value until 4 s in); baseline: neither; ${guarded.hotReads} hot reads each`,
    },
  );
  return rows;
});
