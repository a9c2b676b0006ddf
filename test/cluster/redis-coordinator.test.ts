/**
 * RedisCoordinator against a real redis-server: several coordinators in one process stand in
 * for separate hubs. Each test uses its own key prefix so that they cannot see each other.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { RedisServer } from '../support/redis-server.ts';
import { RedisCoordinator, type RedisCoordinatorOptions } from '../../hub/src/cluster/redis-coordinator.ts';
import type { HubEvent, HubStatus } from '../../hub/src/core/coordinator.ts';
import { HotKeyError, ValidationError } from '@hotkey/sdk';
import { DEFAULT_RULE, type Rule } from '@hotkey/sdk/rules';
import { TcpProxy } from '../support/tcp-proxy.ts';
import { delay, waitFor } from '../support/wait.ts';
import { loggerFromFunction } from '../../hub/src/core/logger.ts';

let redis: RedisServer;
let raw: Redis;
let prefixCounter = 0;
const open: RedisCoordinator[] = [];

const rule = (match: string, threshold: number): Rule => ({ ...DEFAULT_RULE, match, threshold });

function hub(
  id: string,
  prefix: string,
  opts: Partial<RedisCoordinatorOptions> = {},
  logs: string[] = [],
): RedisCoordinator {
  const c = new RedisCoordinator({
    url: redis.url,
    nodeId: id,
    prefix,
    heartbeatMs: 200,
    memberTtlMs: 1000,
    logger: loggerFromFunction((m) => logs.push(m)),
    ...opts,
  });
  open.push(c);
  return c;
}

/** Starts coordinator `c` as its hub would, under a placeholder SDK URL. */
async function started(c: RedisCoordinator): Promise<RedisCoordinator> {
  await c.start({ id: c.selfId, url: `ws://127.0.0.1:1/${c.selfId}` });
  return c;
}

const ids = (c: RedisCoordinator) =>
  c
    .members()
    .members.map((m) => m.id)
    .join(',');
const nextPrefix = () => `hk-test-${process.pid}-${++prefixCounter}:`;

test.before(async () => {
  redis = await RedisServer.start();
  raw = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  raw.on('error', () => {});
  await raw.connect();
});

test.after.each(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

test.after(async () => {
  raw.disconnect();
  await redis.stop();
});

test('hubs join, see each other with one epoch, and a graceful leave bumps the epoch', async () => {
  const prefix = nextPrefix();
  const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((id) => started(hub(id, prefix))));
  for (const h of [a!, b!, c!]) await waitFor(`${h.selfId} to see 3 members`, () => ids(h) === 'a,b,c');
  await waitFor('one epoch everywhere', () => new Set([a!, b!, c!].map((h) => h.members().epoch)).size === 1);
  const before = a!.members().epoch;
  assert.ok(before >= 3, `three joins bump the epoch at least 3 times, got ${before}`);
  assert.equal(a!.members().members.find((m) => m.id === 'b')?.url, 'ws://127.0.0.1:1/b');

  const seen: number[] = [];
  a!.onMembers((epoch) => seen.push(epoch));
  const t0 = Date.now();
  await c!.leave();
  assert.is(ids(c!), 'a,b', 'the leaving hub no longer lists itself');
  await waitFor('a and b to drop c', () => ids(a!) === 'a,b' && ids(b!) === 'a,b');
  const took = Date.now() - t0;
  assert.ok(took < 1000, `a leave is heard through pub/sub, not expiry (took ${took} ms)`);
  assert.ok(a!.members().epoch > before, 'epoch grows on leave');
  assert.ok(seen.length >= 1 && seen.every((e) => e > before), `onMembers fired with the new epoch: ${seen}`);
  assert.equal((await raw.zrange(`${prefix}members`, '0', '-1')).sort(), ['a', 'b']);
});

test('a member change announced while a heartbeat is in flight is fetched right after it, not a heartbeat later', async () => {
  const prefix = nextPrefix();
  const proxy = await TcpProxy.start(redis.port);
  try {
    // beats on notices only: the next heartbeat is far away
    const slow = { heartbeatMs: 10_000, memberTtlMs: 30_000, rulesPollMs: 10_000 };
    const a = await started(hub('a', prefix, { ...slow, url: `redis://127.0.0.1:${proxy.port}` }));
    const b = await started(hub('b', prefix, slow));
    await waitFor('a to see b', () => ids(a) === 'a,b', 3000);
    const lines = String(await raw.client('LIST')).split('\n');
    const portOf = (name: string) =>
      Number(/ addr=[^ ]*:(\d+) /.exec(lines.find((l) => l.includes(` name=${name} `)) ?? '')?.[1]);
    const scripts = async () => Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(await raw.info('commandstats'))?.[1] ?? 0);

    // a beat of a's runs at Redis, its reply held: a's list stays as it was when the script ran
    assert.ok(proxy.holdReplies(portOf('hotkey-hub:a')), "a's command connection found");
    const calls = await scripts();
    await raw.publish(`${prefix}members-changed`, '0');
    await waitFor('a and b to run a beat each', async () => (await scripts()) >= calls + 2, 3000);

    // b leaves after that beat ran; its notice reaches a while the beat is still in flight
    const sub = portOf('hotkey-hub:a:sub');
    const heard = proxy.delivered(sub);
    await b.leave();
    await waitFor("b's leave announced to a's subscriber", () => proxy.delivered(sub) > heard, 3000);
    await delay(50); // a handles the notice before the beat's reply comes
    proxy.releaseReplies();
    await waitFor('a to drop b', () => ids(a) === 'a', 2000);
  } finally {
    proxy.releaseReplies();
    await proxy.close();
  }
});

test('a hub that dies without leaving is swept at once, as soon as its connections drop', async () => {
  const prefix = nextPrefix();
  const a = await started(hub('a', prefix));
  const d = await started(hub('d', prefix));
  await waitFor('a to see d', () => ids(a) === 'a,d');
  // d's own heartbeat vouches for its presence subscription well within its first TTL, so even a
  // hub that dies a moment after joining is swept without waiting out the TTL
  const t = Date.now();
  await waitFor(
    'd to vouch for its subscription',
    async () => (await raw.hget(`${prefix}member-since`, 'd')) === '0',
    900,
  );
  assert.ok(Date.now() - t < 1000, 'vouched within one TTL');
  await delay(300); // a's heartbeats (200 ms) see d subscribed
  assert.is(ids(a), 'a,d', 'a live hub, subscribed to its presence channel, stays');
  const epoch = a.members().epoch;
  const t0 = Date.now();
  await d.close(); // stops heartbeating, no leave: a crash as far as Redis can tell
  await waitFor('a to drop d', () => ids(a) === 'a', 3000);
  const took = Date.now() - t0;
  // its presence subscription vanished with its connections: a's next heartbeat (200 ms) drops it
  assert.ok(took < 1000, `dead member swept in ${took} ms, before its TTL (1000 ms)`);
  assert.ok(a.members().epoch > epoch);
});

test('rules: seeded from config, changed through a hub or straight in Redis, garbage rejected', async () => {
  const prefix = nextPrefix();
  const logsB: string[] = [];
  const a = await started(hub('a', prefix, { apps: { shop: { rules: [rule('item:*', 100)] } } }));
  const b = await started(hub('b', prefix, { apps: { shop: { rules: [rule('other:*', 5)] } } }, logsB));
  assert.equal(b.rules('shop'), [rule('item:*', 100)], "what Redis holds (seeded by a) wins over b's config");
  assert.equal(JSON.parse((await raw.hget(`${prefix}rules`, 'shop'))!), [rule('item:*', 100)]);

  const heard: [string, Rule[]][] = [];
  b.onRules((app, rules) => heard.push([app, rules]));
  let t0 = Date.now();
  const stored = await a.setRules('shop', [{ match: 'sku:*', threshold: 50 }]);
  assert.equal(stored, [rule('sku:*', 50)], 'defaults filled in');
  await waitFor('b to hear the change', () => heard.length === 1);
  assert.ok(Date.now() - t0 < 1000, 'within 1 s');
  assert.equal(heard[0], ['shop', [rule('sku:*', 50)]]);
  assert.equal(b.rules('shop'), [rule('sku:*', 50)]);

  try {
    await a.setRules('shop', [{ match: 'x', threshold: -1 }]);
    assert.unreachable('a negative threshold must be rejected');
  } catch (err) {
    assert.instance(err, ValidationError);
    assert.is((err as ValidationError).field, 'rules[0].threshold');
  }
  assert.equal(a.rules('shop'), [rule('sku:*', 50)], 'previous rules stay');

  t0 = Date.now();
  await raw.hset(`${prefix}rules`, 'shop', JSON.stringify([{ match: 'direct', threshold: 7 }]));
  await waitFor(
    'a direct edit in Redis to reach both hubs',
    () => a.rules('shop')[0]?.match === 'direct' && b.rules('shop')[0]?.match === 'direct',
  );
  assert.ok(Date.now() - t0 < 1000, `direct edit seen in ${Date.now() - t0} ms`);

  await raw.hset(`${prefix}rules`, 'shop', '[{"match":"z","threshold":"lots"}]');
  await raw.hset(`${prefix}rules`, 'new-app', 'not json');
  await waitFor('b to log the bad rules', () =>
    logsB.some((l) => l.includes('"shop"') && l.includes('rules[0].threshold')),
  );
  await waitFor('b to log the unparsable rules', () => logsB.some((l) => l.includes('"new-app"')));
  assert.equal(b.rules('shop'), [rule('direct', 7)], 'old rules kept after garbage');
  assert.equal(b.rules('new-app'), [], 'an app whose only rules are garbage gets the default rule');
  const count = logsB.length;
  await delay(700); // a few more polls of the same garbage
  assert.is(logsB.length, count, 'the same garbage is reported once, not every poll');
});

test('tokens come from Redis as well as the config file', async () => {
  const prefix = nextPrefix();
  const a = await started(hub('a', prefix, { apps: { shop: { token: 'from-config' }, feed: {} } }));
  assert.equal(a.app('shop'), { token: 'from-config' });
  assert.equal(a.app('feed'), {});
  assert.is(a.app('stranger'), undefined);
  await raw.hset(`${prefix}tokens`, 'stranger', 's3cret', 'shop', 'rotated');
  await waitFor('tokens from Redis', () => a.app('stranger')?.token === 's3cret');
  assert.equal(a.app('shop'), { token: 'rotated' }, 'Redis wins over the config file');
  assert.ok(a.apps().includes('stranger') && a.apps().includes('shop') && a.apps().includes('feed'));

  const openHub = await started(hub('o', nextPrefix(), { open: true }));
  assert.equal(openHub.app('anything'), {}, 'an open hub knows every app');
});

test('history: appended to a stream, read by app and since, oldest first', async () => {
  const prefix = nextPrefix();
  const a = await started(hub('a', prefix));
  const b = await started(hub('b', prefix));
  const base = Date.now() - 10_000;
  const ev = (app: string, key: string, at: number, type: HubEvent['type'] = 'promote'): HubEvent => ({
    type,
    app,
    key,
    qps: 1234,
    at,
    hub: 'a',
  });
  a.publishEvent(ev('shop', 'k1', base + 1000));
  a.publishEvent(ev('feed', 'k2', base + 2000));
  a.publishEvent(ev('shop', 'k3', base + 3000, 'demote'));
  a.publishEvent(ev('shop', 'k4', base + 4000));
  await waitFor('4 entries in the stream', async () => (await raw.xlen(`${prefix}history`)) === 4);

  const shop = await b.history('shop', base + 1500, 100);
  assert.equal(
    shop.map((e) => e.key),
    ['k3', 'k4'],
    'app and since filter, oldest first, read from any hub',
  );
  assert.is(shop[0]!.type, 'demote');
  assert.is(shop[0]!.qps, 1234);
  const all = await b.history(undefined, 0, 3);
  assert.equal(
    all.map((e) => e.key),
    ['k1', 'k2', 'k3'],
    'all apps, limited',
  );
  assert.equal(await b.history('nope', 0, 10), []);

  const capped = hub('c', prefix, { historyMaxLen: 50 });
  await started(capped);
  for (let i = 0; i < 500; i++) capped.publishEvent(ev('shop', `bulk${i}`, base + 5000 + i));
  await waitFor(
    'stream capped near 50',
    async () => {
      const len = await raw.xlen(`${prefix}history`);
      // MAXLEN ~ trims whole stream nodes (100 entries each), so "near" is within a node or two
      return len > 0 && len <= 250 && (await b.history('shop', base + 5499, 10)).length === 1;
    },
    6000,
  );
});

test('the live feed reaches every hub once, and statuses show the whole cluster', async () => {
  const prefix = nextPrefix();
  const hubs = await Promise.all(['a', 'b', 'c'].map((id) => started(hub(id, prefix))));
  for (const h of hubs) await waitFor(`${h.selfId} to see 3 members`, () => ids(h) === 'a,b,c');
  const got = new Map<string, HubEvent[]>(hubs.map((h) => [h.selfId, []]));
  for (const h of hubs) h.onEvent((e) => got.get(h.selfId)!.push(e));
  const event: HubEvent = {
    type: 'promote',
    app: 'shop',
    key: 'item:1',
    qps: 5000,
    at: Date.now(),
    hub: 'b',
    latencyMs: 120,
  };
  hubs[1]!.publishEvent(event);
  await waitFor('every hub to see the event', () => [...got.values()].every((list) => list.length >= 1));
  await delay(100); // a duplicate would arrive within this
  for (const [id, list] of got) assert.equal(list, [event], `hub ${id} saw it exactly once`);

  // Garbage on the channel is counted and ignored.
  await raw.publish(`${prefix}events`, '{"event":{"type":"explode"}}');
  await waitFor('bad message counted', () => hubs[0]!.stats().badMessages === 1);

  const status = (id: string): HubStatus => ({
    id,
    url: `ws://127.0.0.1:1/${id}`,
    startedAt: Date.now(),
    ingestRate: 10,
    connections: 2,
    heapUsed: 1,
    rss: 1,
    redis: 'ok',
    hotKeys: [],
    instanceRows: [],
    updatedAt: Date.now(),
  });
  for (const h of hubs) h.publishStatus(status(h.selfId));
  for (const h of hubs)
    await waitFor(
      `${h.selfId} to list 3 statuses`,
      () =>
        h
          .statuses()
          .map((s) => s.id)
          .join(',') === 'a,b,c',
    );
  await hubs[2]!.leave();
  await waitFor(
    'a to forget the status of the hub that left',
    () =>
      hubs[0]!
        .statuses()
        .map((s) => s.id)
        .join(',') === 'a,b',
  );
});

test('Redis restart: degraded while down, then re-registered, rules re-seeded, history flushed', async () => {
  const prefix = nextPrefix();
  const a = await started(hub('a', prefix, { apps: { shop: { rules: [rule('item:*', 100)] } } }));
  const b = await started(hub('b', prefix));
  await waitFor('both members', () => ids(a) === 'a,b' && ids(b) === 'a,b');
  await a.setRules('shop', [{ match: 'live:*', threshold: 9 }]);
  await waitFor('b has the live rules', () => b.rules('shop')[0]?.match === 'live:*');
  assert.is(a.health().state, 'ok');
  const epoch = a.members().epoch;

  await redis.stop();
  await waitFor('a degraded', () => a.health().state === 'degraded');
  assert.match(a.health().detail, /unreachable/);
  assert.is(ids(a), 'a,b', 'last known members kept');
  assert.equal(b.rules('shop'), [rule('live:*', 9)], 'last known rules kept');
  a.publishEvent({ type: 'promote', app: 'shop', key: 'during-outage', qps: 1, at: Date.now(), hub: 'a' });
  assert.equal(
    (await a.history('shop', 0, 10)).map((e) => e.key),
    ['during-outage'],
    'history answers from what the hub saw',
  );
  const refused = await a.setRules('shop', []).then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.instance(refused, HotKeyError);
  assert.is((refused as HotKeyError).code, 'HK_ERR_UNAVAILABLE', 'rules cannot be stored while Redis is down');

  await redis.restart();
  const t0 = Date.now();
  await waitFor('a and b healthy again', () => a.health().state === 'ok' && b.health().state === 'ok', 5000);
  const recoveredIn = Date.now() - t0;
  assert.ok(recoveredIn < 3000, `recovered in ${recoveredIn} ms`);
  await waitFor(
    'both re-registered',
    async () => (await raw.zrange(`${prefix}members`, '0', '-1')).sort().join(',') === 'a,b',
  );
  assert.ok(a.members().epoch > epoch, 'the epoch never goes back, even though Redis restarted empty');
  assert.equal(
    JSON.parse((await raw.hget(`${prefix}rules`, 'shop'))!),
    [rule('live:*', 9)],
    'live rules re-seeded, not the config ones',
  );
  await waitFor('buffered history flushed', async () => (await raw.xlen(`${prefix}history`)) === 1);
  assert.equal(
    (await b.history('shop', 0, 10)).map((e) => e.key),
    ['during-outage'],
  );

  // The subscriber resubscribed: the live feed flows again.
  const feed: string[] = [];
  b.onEvent((e) => feed.push(e.key));
  a.publishEvent({ type: 'demote', app: 'shop', key: 'after-outage', qps: 0, at: Date.now(), hub: 'a' });
  await waitFor('b to hear a over pub/sub after the restart', () => feed.includes('after-outage'));
});

test('a hub started while Redis is down resolves, retries, and joins when Redis comes up', async () => {
  const prefix = nextPrefix();
  await redis.stop();
  const logs: string[] = [];
  const late = hub('late', prefix, { startTimeoutMs: 500, apps: { shop: { rules: [rule('item:*', 100)] } } }, logs);
  const t0 = Date.now();
  await late.start({ id: 'late', url: 'ws://127.0.0.1:1/late' });
  assert.ok(Date.now() - t0 < 1500, 'start() does not wait for Redis');
  assert.is(late.health().state, 'degraded');
  assert.ok(
    logs.some((l) => l.includes('cannot reach Redis')),
    `says so clearly: ${logs.join(' | ')}`,
  );
  assert.is(ids(late), 'late');
  assert.equal(late.rules('shop'), [rule('item:*', 100)], 'serves the configured rules meanwhile');

  await redis.restart();
  await raw.ping().catch(() => undefined);
  await waitFor('late healthy', () => late.health().state === 'ok', 5000);
  await waitFor(
    'late registered',
    async () => (await raw.zrange(`${prefix}members`, '0', '-1').catch(() => [])).join(',') === 'late',
  );
  assert.ok(await raw.hget(`${prefix}rules`, 'shop'), 'config rules seeded');
});

test.run();
