/**
 * The node-redis adapter's circuit breaker per Cluster master, on a real 3-master Redis Cluster
 * (`redis-server --cluster-enabled yes` ×3) and a `createCluster(...)` client: one master frozen
 * with SIGSTOP opens only its own breaker — keys on it fail fast with HK_ERR_BREAKER_OPEN, its hot
 * key is still served from memory and one past its cacheTtlMs by stale-if-error, keys on the
 * other masters are served as usual — and SIGCONT lets the probe close it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createCluster } from 'redis';
import { ErrorCode, type HotKeyClient } from '@hotkey/sdk';
import { breakerStats, withHotKeys } from '@hotkey/sdk/node-redis';
import { breakerRules, outcome, STUCK_MS } from '../support/breaker.ts';
import { hubInProcess } from '../support/e2e.ts';
import { destroyAll, keyPerMaster } from '../support/node-redis.ts';
import { promoteInProcess } from '../support/promote.ts';
import { RedisCluster } from '../support/redis-cluster.ts';
import { delay, waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, { config: { apps: { shop: { rules: breakerRules(1_000_000) } } } });
let rc: RedisCluster;
let frozen: number | undefined;
const opened: Array<{ destroy(): void }> = [];

const newCluster = () => createCluster({ rootNodes: rc.nodes.map((n) => ({ socket: n })) });

test.before(async () => {
  rc = await RedisCluster.start();
});
test.after(async () => {
  if (frozen !== undefined) rc.resume(frozen);
  destroyAll(opened);
  await delay(20);
  await rc?.stop();
});

const promote = (key: string, hk: HotKeyClient) => promoteInProcess(e2e.hub, 'shop', key, [hk]);

test('SIGSTOP of one master opens its breaker only; its hot keys stay served; SIGCONT closes it', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const states: string[] = [];
  hk!.on('breaker', (e) => states.push(`${e.node} ${e.state}`));
  const raw = newCluster();
  raw.on('error', () => {});
  opened.push(raw);
  await raw.connect();
  const c = withHotKeys(raw, hk!, { tracking: false, breaker: { failures: 5, coolDownMs: 500, timeoutMs: 200 } });
  const cold = keyPerMaster(c, rc, 'cold');
  const [victimPort, victimCold] = [...cold][0]!;
  const victim = `127.0.0.1:${victimPort}`;
  const hot = keyPerMaster(c, rc, 'hot').get(victimPort)!;
  const stale = keyPerMaster(c, rc, 'stale').get(victimPort)!;
  for (const key of [...cold.values(), hot, stale]) await c.set(key, `${key}=1`);
  for (const key of [hot, stale]) {
    await promote(key, hk!);
    await waitFor(
      `${key} cached`,
      async () => {
        const hits = hk!.stats().hits;
        return (await c.get(key)) === `${key}=1` && hk!.stats().hits > hits;
      },
      3000,
    );
  }

  frozen = victimPort;
  rc.pause(victimPort);
  try {
    const stuck = Array.from({ length: 5 }, () => outcome(c.get(victimCold), STUCK_MS));
    await waitFor('victim breaker open', () => states.includes(`${victim} open`), 5000);
    // still frozen: commands for the victim fail at once; the other masters answer
    assert.equal(await outcome(c.get(victimCold)), { code: ErrorCode.BreakerOpen });
    assert.equal(await outcome(c.set(victimCold, 'x')), { code: ErrorCode.BreakerOpen });
    for (const [port, key] of cold) if (port !== victimPort) assert.is(await c.get(key), `${key}=1`, `master ${port}`);
    assert.equal(await outcome(c.get(hot)), { value: `${hot}=1` }, 'a cached hot key of the frozen master');
    await delay(400); // past the stale key's cacheTtlMs: its reload is refused, the last value served
    const staleBefore = hk!.stats().staleServed;
    assert.equal(await outcome(c.get(stale)), { value: `${stale}=1` });
    assert.ok(hk!.stats().staleServed > staleBefore, 'served by stale-if-error');
    const stats = breakerStats(c);
    assert.is(stats.find((b) => b.node === victim)?.state, 'open', JSON.stringify(stats));
    const others = stats.filter((b) => b.node !== victim);
    assert.is(others.length, rc.ports.length - 1, JSON.stringify(stats));
    for (const b of others) assert.is(b.state, 'closed', b.node);
    assert.ok(
      states.every((s) => s.startsWith(victim)),
      states.join(', '),
    );
    rc.resume(victimPort);
    frozen = undefined;
    // the stuck reads were sent before it froze: they complete now
    for (const r of await Promise.all(stuck)) assert.equal(r, { value: `${victimCold}=1` });
  } finally {
    if (frozen !== undefined) rc.resume(frozen);
    frozen = undefined;
  }
  await waitFor('victim breaker closed', () => states.at(-1) === `${victim} closed`, 5000);
  assert.equal(states, [`${victim} open`, `${victim} half-open`, `${victim} closed`]);
  assert.is(await c.get(victimCold), `${victimCold}=1`);
  await c.set(victimCold, 'after');
  assert.is(await c.get(victimCold), 'after');
});

test.run();
