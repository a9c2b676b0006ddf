/**
 * The circuit breaker per Cluster master, on a real 3-master Redis Cluster: one master frozen
 * with SIGSTOP opens only its own breaker — keys on it fail fast with HK_ERR_BREAKER_OPEN, keys on
 * the other masters are served as usual — and SIGCONT lets the probe close it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Cluster } from 'ioredis';
import { ErrorCode, type HotKeyError } from '@hotkey/sdk';
import { hotKeyStats, hashSlot, withHotKeys } from '@hotkey/sdk/ioredis';
import { hubInProcess } from '../support/e2e.ts';
import { RedisCluster } from '../support/redis-cluster.ts';
import { waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, { config: { apps: { shop: { rules: [{ match: 'hot:*', threshold: 1000 }] } } } });
let redisCluster: RedisCluster;
let frozen: number | undefined;
const opened: Cluster[] = [];

test.before(async () => {
  redisCluster = await RedisCluster.start();
});
test.after(async () => {
  if (frozen !== undefined) redisCluster.resume(frozen);
  for (const c of opened) c.disconnect();
  await redisCluster?.stop();
});

test('SIGSTOP of one master opens its breaker only; SIGCONT closes it', async () => {
  const [hk] = await e2e.sdks(1);
  const states: string[] = [];
  hk!.on('breaker', (e) => states.push(`${e.node} ${e.state}`));
  const redis = withHotKeys(new Cluster(redisCluster.nodes, { redisOptions: { maxRetriesPerRequest: 1 } }), hk!, {
    tracking: false,
    breaker: { failures: 5, coolDownMs: 500, timeoutMs: 200 },
  });
  opened.push(redis);
  await waitFor('cluster ready', () => redis.status === 'ready', 10_000);
  // one key per master, by the slot table the client holds
  const byMaster = new Map<string, string>();
  for (let i = 0; byMaster.size < 3 && i < 1000; i++) {
    const key = `k:${i}`;
    const owner = redis.slots[hashSlot(key)]![0]!;
    if (!byMaster.has(owner)) byMaster.set(owner, key);
  }
  const [first, ...others] = [...byMaster];
  const [victim, victimKey] = first!;
  for (const key of byMaster.values()) await redis.set(key, key);
  frozen = Number(victim!.split(':')[1]);
  redisCluster.pause(frozen);
  try {
    const stuck = Array.from({ length: 5 }, () => redis.get(victimKey!).catch(() => 'failed late'));
    await waitFor('victim breaker open', () => states.includes(`${victim} open`), 5000);
    const err = await redis.get(victimKey!).then(
      () => undefined,
      (e: HotKeyError) => e,
    );
    assert.is(err?.code, ErrorCode.BreakerOpen);
    for (const [, key] of others) assert.is(await redis.get(key), key, 'other masters answer');
    const stats = hotKeyStats(redis).breakers;
    assert.is(stats.find((b) => b.node === victim)?.state, 'open');
    for (const b of stats) if (b.node !== victim) assert.is(b.state, 'closed', b.node);
    redisCluster.resume(frozen);
    frozen = undefined;
    await Promise.all(stuck);
  } finally {
    if (frozen !== undefined) redisCluster.resume(frozen);
  }
  await waitFor('victim breaker closed', () => states.at(-1) === `${victim} closed`, 5000);
  assert.is(await redis.get(victimKey!), victimKey);
});

test.run();
