/**
 * Window handoff on a real cluster (three hub processes, a fourth hub joining in this process, one
 * redis-server, ten SDKs): a burst at 3 × threshold for 0.6 s straddling a membership change is
 * promoted, which neither hub would do alone (each sees about 0.9 × threshold).
 * Leave (SIGTERM) and join hand windows over; a crash hands nothing over, and a surge that goes on
 * is promoted by the new owner within the bound docs/concepts/ownership.md states (failover plus one window).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseHubConfig, startHub, type Hub } from '@hotkey/hub';
import { RedisCoordinator } from '../../hub/src/cluster/redis-coordinator.ts';
import { createRedisClient } from '../../hub/src/cluster/redis-client.ts';
import { encodeChunks } from '../../hub/src/core/membership/handoff-chunk.ts';
import { silentLogger } from '../../hub/src/core/logger.ts';
import { ADMIN, APP, Cluster, httpJson } from './cluster-harness.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';
import { delay, waitFor } from '../support/wait.ts';

const IDS = ['hub-a', 'hub-b', 'hub-c'];
const THRESHOLD = 200;
const RULES = [{ match: 'item:*', threshold: THRESHOLD, hotMs: 60_000, cacheTtlMs: 60_000 }];
/**
 * The reproduction's burst is 2 × threshold per second for 0.6 s with the change 0.3 s in. The
 * SDKs' pre-filter may leave 20 % of the threshold unreported, so 2 × for 0.6 s reaches the hub
 * at the threshold itself and a few counts decide it either way; 3 × keeps the burst decidable
 * under load: promoted by a hub that sees all of it, not by one that sees half (0.9 × before
 * the pre-filter). On a loaded machine the change may land late and the old owner promote the
 * key itself: then its hot state is what moves, and the new owner must hold the key hot.
 */
const RATE = 3 * THRESHOLD;
const BURST_MS = 600;
const CHANGE_AT_MS = 300;

let cluster: Cluster;
let joiner: Hub | undefined;
let proxy: TcpProxy | undefined;

test.before(async () => {
  cluster = await Cluster.setup(IDS, RULES, 10);
});

test.after(async () => {
  await joiner?.close().catch(() => undefined);
  await proxy?.close();
  await cluster?.close();
});

async function counter(hubUrl: string, name: string): Promise<number> {
  const res = await fetch(`${hubUrl}/metrics`, { signal: AbortSignal.timeout(3000) });
  const line = (await res.text()).split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

async function promotedBy(viaHub: string, key: string, since: number): Promise<string | undefined> {
  const events = await cluster.history(viaHub, since);
  return events.find((e) => e.type === 'promote' && e.key === key)?.hub;
}

/**
 * RATE accesses a second of `key` for BURST_MS, spread round-robin over the SDKs and caught up by
 * elapsed time (a late timer under load does not thin the burst).
 */
async function burst(key: string): Promise<void> {
  const start = performance.now();
  let done = 0;
  for (;;) {
    const elapsed = Math.min(BURST_MS, performance.now() - start);
    for (const due = Math.floor((RATE * elapsed) / 1000); done < due; done++)
      cluster.clients[done % cluster.clients.length]!.track(key);
    if (elapsed >= BURST_MS) return;
    await delay(5);
  }
}

/** Runs the burst on `key`, calling `change` CHANGE_AT_MS in; resolves when both are done. */
async function burstAcross(key: string, change: () => Promise<unknown>): Promise<void> {
  const running = burst(key);
  await delay(CHANGE_AT_MS);
  await Promise.all([change(), running]);
}

test('the same burst without a membership change is promoted by its owner', async () => {
  const [key] = Cluster.keysOwnedBy(IDS, 'hub-b', 1, 'item:steady-burst:');
  const t0 = Date.now();
  await burstAcross(key!, async () => undefined);
  const by = await waitFor('the key promoted', () => promotedBy('hub-a', key!, t0), 5000);
  assert.is(by, 'hub-b');
  console.log(`# no change: promoted by hub-b ${Date.now() - t0} ms after the burst began`);
});

test('leave mid-window (SIGTERM of the owner 0.3 s into the burst): the new owner promotes the key', async () => {
  const [key] = Cluster.keysOwnedBy(IDS, 'hub-b', 1, 'item:leave-burst:');
  const heir = Cluster.owner(['hub-a', 'hub-c'], key!);
  const t0 = Date.now();
  await burstAcross(key!, async () => {
    const exit = await cluster.hub('hub-b').stop('SIGTERM', 8000);
    assert.is(exit.code, 0, 'graceful exit');
  });
  await cluster.waitMembers(['hub-a', 'hub-c'], 5000);
  const by = await waitFor('the key promoted after the leave', () => promotedBy('hub-a', key!, t0), 5000);
  assert.ok(by === heir || by === 'hub-b', `promoted by ${by}`);
  await waitFor(
    'the heir holds the key hot',
    async () => {
      const { body } = await httpJson(`${cluster.hub(heir).httpUrl}/api/hot?app=${APP}`);
      return (body.hot as { key: string }[]).some((r) => r.key === key);
    },
    5000,
  );
  assert.ok((await counter(cluster.hub(heir).httpUrl, 'hotkey_handoff_keys_received_total')) >= 1);
  await waitFor('every SDK holds the key hot', () => cluster.clients.every((c) => c.isHot(key!)), 5000);
  console.log(`# leave: promoted by ${heir} ${Date.now() - t0} ms after the burst began`);
});

test('join mid-window (a hub joins 0.3 s into the burst and takes the key): it promotes the key', async () => {
  const live = ['hub-a', 'hub-c'];
  const after = [...live, 'hub-d'];
  const [key] = Cluster.keysOwnedBy(after, 'hub-d', 1, 'item:join-burst:');
  const config = parseHubConfig({ apps: { [APP]: { rules: RULES } } });
  // hub-d starts first, its Redis behind a frozen proxy (alone, not a member yet): thawing it
  // makes the join happen when the test says, not when a process happens to finish booting
  proxy = await TcpProxy.start(cluster.redis.port);
  proxy.freeze();
  joiner = await startHub({
    port: 0,
    logger: silentLogger,
    config,
    adminToken: ADMIN,
    coordinator: new RedisCoordinator({
      url: `redis://127.0.0.1:${proxy.port}`,
      nodeId: 'hub-d',
      apps: config.apps,
      logger: silentLogger,
      startTimeoutMs: 100,
      maxBackoffMs: 50,
    }),
  });
  const t0 = Date.now();
  await burstAcross(key!, async () => proxy!.thaw());
  const by = await waitFor('the key promoted after the join', () => promotedBy('hub-a', key!, t0), 5000);
  assert.ok(by === 'hub-d' || by === Cluster.owner(live, key!), `promoted by ${by}`);
  await waitFor('the joiner holds the key hot', () => joiner!.core.hotKeys(APP).some((r) => r.key === key), 5000);
  assert.ok(joiner.core.metrics.handoff.keysReceived >= 1, 'the window was handed over');
  assert.is(joiner.core.metrics.handoff.refused.not_owner, 0);
  const { body } = await httpJson(`${cluster.hub('hub-a').httpUrl}/api/cluster`);
  assert.equal((body.members as { id: string }[]).map((m) => m.id).sort(), after);
  console.log(`# join: promoted by hub-d ${Date.now() - t0} ms after the burst began`);
});

test('crash mid-window: nothing is handed over; a surge that goes on is promoted within failover + one window', async () => {
  const members = ['hub-a', 'hub-c', 'hub-d'];
  const victim = 'hub-c';
  const [key] = Cluster.keysOwnedBy(members, victim, 1, 'item:crash-surge:');
  const heir = Cluster.owner(['hub-a', 'hub-d'], key!);
  cluster.traffic({ [key!]: RATE });
  await delay(CHANGE_AT_MS);
  const killedAt = Date.now();
  cluster.hub(victim).child.kill('SIGKILL');
  try {
    // the bound (docs/concepts/ownership.md): member TTL (2 s) + one window (1 s) + the SDKs' flush; generous under load
    const by = await waitFor('the key promoted after the crash', () => promotedBy('hub-a', key!, killedAt), 10_000);
    assert.is(by, heir);
    console.log(`# crash: promoted by ${heir} ${Date.now() - killedAt} ms after the kill (bound 3000 ms + flush)`);
  } finally {
    cluster.stopTraffic();
  }
  const sent = await httpJson(`${cluster.hub('hub-a').httpUrl}/api/cluster`);
  assert.is(sent.status, 200);
});

test('a forged chunk through Redis (a hub that is not a member; a stale epoch) is refused, logged, and changes nothing', async () => {
  const redis = createRedisClient({ url: cluster.redis.url, name: 'handoff-test' });
  await redis.connect();
  try {
    const epoch = Number(await redis.get('hotkey:epoch'));
    const [key] = Cluster.keysOwnedBy(['hub-a', 'hub-d'], 'hub-a', 1, 'item:forged:');
    const forged = (from: string, at: number) =>
      encodeChunks({ from, to: 'hub-a', epoch: at, app: APP }, [
        { key: key!, sliceMs: 100, slices: [THRESHOLD * 5, 0, 0, 0, 0, 0, 0, 0, 0, 0], hotMs: 0, hotAgeMs: 0 },
      ])[0]!;
    for (const bytes of [forged('hub-x', epoch), forged('hub-d', epoch - 1)])
      await redis.rpush('hotkey:handoff:hub-a', Buffer.from(bytes));
    await redis.publish('hotkey:handoff', 'hub-a');
    const base = cluster.hub('hub-a').httpUrl;
    await waitFor(
      'both refusals counted',
      async () =>
        (await counter(base, 'hotkey_handoff_refused_not_member_total')) >= 1 &&
        (await counter(base, 'hotkey_handoff_refused_stale_epoch_total')) >= 1,
      5000,
    );
    const lines = cluster
      .hub('hub-a')
      .stdout.split('\n')
      .filter((l) => l.includes('handoff_refused'));
    assert.ok(
      lines.some((l) => l.includes('not_member')) && lines.some((l) => l.includes('stale_epoch')),
      lines.join('\n'),
    );
    assert.is(await promotedBy('hub-a', key!, 0), undefined, 'the forged counts promoted nothing');
  } finally {
    redis.disconnect();
  }
});

test.run();
