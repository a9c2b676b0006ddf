/**
 * The node-redis adapter's circuit breaker against a real redis-server frozen with SIGSTOP
 * (connections stay open, nothing answers — the case where node-redis would queue commands
 * forever): five unanswered commands open it, later commands and batches fail fast with
 * HK_ERR_BREAKER_OPEN while the server is still frozen, a hot key is still served from memory and
 * its load is refused at once (the rejection stale-if-error serves the last value on), the state
 * shows in breakerStats(), metrics and 'breaker' events, and after SIGCONT the half-open probe
 * closes it. The same on a pool. Redis error replies are the node answering: they never open it.
 * While nothing is in flight the breaker keeps no timer.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient, createClientPool } from 'redis';
import { ErrorCode, type HotKeyClient } from '@hotkey/sdk';
import { breakerStats, withHotKeys } from '@hotkey/sdk/node-redis';
import { assertOpenSeries, breakerRules, breakerSeries, outcome, STUCK_MS, thaw } from '../support/breaker.ts';
import { hubInProcess } from '../support/e2e.ts';
import { destroyAll } from '../support/node-redis.ts';
import { RedisServer } from '../support/redis-server.ts';
import { timerLedger } from '../support/timer-ledger.ts';
import { delay, waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, { config: { apps: { shop: { rules: breakerRules(20) } } } });
let server: RedisServer;
const opened: Array<{ destroy(): void }> = [];
const BREAKER = { failures: 5, coolDownMs: 500, timeoutMs: 200 };

test.before(async () => {
  server = await RedisServer.start();
});
test.after(async () => {
  server?.resume();
  destroyAll(opened);
  await server?.stop();
});

async function connected<C extends { on(e: string, l: () => void): unknown; connect(): Promise<unknown> }>(
  c: C,
): Promise<C> {
  c.on('error', () => {});
  opened.push(c as unknown as { destroy(): void });
  await c.connect();
  return c;
}

/** Reads each key until the hub promoted it, then until a read of it is answered from the cache. */
async function makeHot(hk: HotKeyClient, read: (key: string) => Promise<unknown>, keys: string[]): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.all(keys.map(read));
  await waitFor('hot keys', () => keys.every((k) => hk.isHot(k)), 3000);
  for (const key of keys) {
    await waitFor(`${key} cached`, async () => {
      const hits = hk.stats().hits;
      await read(key);
      return hk.stats().hits > hits;
    });
  }
}

/** A client wrapped with the test's breaker (and `tracking`), its hk, and the breaker's states as its events say them. */
async function breakerClient(tracking: false | { pingMs: number; deadMs: number } = false) {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const events: string[] = [];
  hk!.on('breaker', (e) => events.push(e.state));
  const redis = withHotKeys(await connected(createClient({ url: server.url })), hk!, { tracking, breaker: BREAKER });
  return { hk: hk!, events, redis };
}

test('SIGSTOP: five timeouts open the breaker, then commands fail fast; hot keys stay in memory; SIGCONT closes it', async () => {
  const { hk, events, redis } = await breakerClient();
  await redis.set('hot:1', 'cached');
  await redis.set('hot:2', 'dropped');
  await redis.set('stale:1', 'last');
  await makeHot(hk!, (k) => redis.get(k), ['hot:1', 'hot:2', 'stale:1']);
  assert.is(await redis.get('stale:1'), 'last');

  server.pause();
  try {
    const stuck = Array.from({ length: 5 }, (_, i) => outcome(redis.get(`cold:${i}`), STUCK_MS));
    await waitFor('breaker open', () => events.includes('open'), 5000);
    const [stats] = breakerStats(redis);
    assert.is(stats?.node, `127.0.0.1:${server.port}`);
    assert.is(stats?.state, 'open');
    // still frozen: these fail at once instead of queueing behind the stuck ones
    assert.equal(await outcome(redis.get('cold:other')), { code: ErrorCode.BreakerOpen });
    assert.equal(await outcome(redis.set('cold:w', '1')), { code: ErrorCode.BreakerOpen });
    assert.equal(await outcome(redis.sendCommand(['HSET', 'cold:h', 'f', '1'])), { code: ErrorCode.BreakerOpen });
    assert.equal(await outcome(redis.multi().set('cold:m', '1').exec()), { code: ErrorCode.BreakerOpen });
    assert.equal(await outcome(redis.multi().get('cold:p').execAsPipeline()), { code: ErrorCode.BreakerOpen });
    // a hot key's cached value is served from memory; a hot key that must load is refused at once
    assert.equal(await outcome(redis.get('hot:1')), { value: 'cached' });
    hk!.dropLocal('hot:2');
    assert.equal(await outcome(redis.get('hot:2')), { code: ErrorCode.BreakerOpen });
    // past its cacheTtlMs (300 ms) the reload is refused at once and the last value is served
    await delay(400);
    const staleBefore = hk!.stats().staleServed;
    assert.equal(await outcome(redis.get('stale:1')), { value: 'last' });
    assert.ok(hk!.stats().staleServed > staleBefore, 'served by stale-if-error');
    const now = breakerStats(redis)[0]!;
    assert.ok(now.rejected >= 7 && now.opened === 1 && now.failures >= 5, JSON.stringify(now));
    assertOpenSeries(hk!, 'node_redis', now); // the same state through the SDK's metrics hook
    assert.ok(server.running, 'all of this while the server is frozen');
    await thaw(() => server.resume(), stuck, events);
  } finally {
    server.resume();
  }
  assert.is(breakerSeries(hk!, 'node_redis_breaker_open', breakerStats(redis)[0]!.node), 0, 'closed again');
  assert.is(await redis.get('hot:2'), 'dropped');
  assert.is(await redis.get('cold:other'), null);
  assert.equal(await redis.multi().set('cold:m', '2').get('cold:m').exec(), ['OK', '2']);
});

test('with tracking: a hot load over the tracking connections is refused at once too, and served stale', async () => {
  // a session that outlives the freeze: the cached record stays vouched for
  const { hk, events, redis } = await breakerClient({ pingMs: 10_000, deadMs: 60_000 });
  await redis.set('stale:t', 'tracked');
  await makeHot(hk!, (k) => redis.get(k), ['stale:t']);
  server.pause();
  try {
    const stuck = Array.from({ length: 5 }, (_, i) => outcome(redis.get(`cold:t:${i}`), STUCK_MS));
    await waitFor('breaker open', () => events.includes('open'), 5000);
    await delay(400); // past cacheTtlMs: the reload would go over the (frozen) tracking connections
    const before = breakerStats(redis)[0]!.rejected;
    const staleBefore = hk!.stats().staleServed;
    assert.equal(await outcome(redis.get('stale:t')), { value: 'tracked' });
    assert.ok(hk!.stats().staleServed > staleBefore, 'served by stale-if-error');
    assert.is(breakerStats(redis)[0]!.rejected, before + 1, 'the load was refused by the breaker, not left to hang');
    server.resume();
    await Promise.all(stuck);
  } finally {
    server.resume();
  }
  await waitFor('breaker closed by the probe', () => events.at(-1) === 'closed', 5000);
});

test('redis-server killed: commands queued while the client reconnects open it; hot keys from memory; a restart closes it', async () => {
  const { hk, events, redis } = await breakerClient();
  await redis.set('hot:k', 'kept');
  await redis.set('stale:k', 'last');
  await makeHot(hk!, (k) => redis.get(k), ['hot:k', 'stale:k']);
  await server.stop();
  try {
    await waitFor('the client reconnecting', () => !redis.isReady, 5000);
    // queued offline by node-redis until the server is back: unanswered, so counted
    const stuck = Array.from({ length: 5 }, (_, i) => outcome(redis.get(`cold:k:${i}`), STUCK_MS));
    await waitFor('breaker open', () => events.includes('open'), 5000);
    assert.equal(await outcome(redis.get('cold:k:other')), { code: ErrorCode.BreakerOpen });
    assert.equal(await outcome(redis.get('hot:k')), { value: 'kept' }, 'a cached hot key while reconnecting');
    await delay(400); // past cacheTtlMs: the reload is refused at once, the last value served
    assert.equal(await outcome(redis.get('stale:k')), { value: 'last' });
    await server.restart();
    // sent again once the client is back; the restarted server has no data
    for (const r of await Promise.all(stuck)) assert.equal(r, { value: null });
  } finally {
    if (!server.running) await server.restart();
  }
  await waitFor('breaker closed by the probe', () => events.at(-1) === 'closed', 10_000);
  assert.is(await redis.get('cold:k:other'), null);
});

test('a pool: its clients share one breaker per node; an open node fails fast through any of them', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const events: string[] = [];
  hk!.on('breaker', (e) => events.push(e.state));
  const pool = withHotKeys(await connected(createClientPool({ url: server.url }, { minimum: 2 })), hk!, {
    tracking: false,
    breaker: BREAKER,
  });
  await pool.set('pool:k', 'v');
  server.pause();
  try {
    const stuck = Array.from({ length: 5 }, (_, i) => outcome(pool.get(`pool:cold:${i}`), STUCK_MS));
    await waitFor('breaker open', () => events.includes('open'), 5000);
    assert.equal(await outcome(pool.get('pool:k')), { code: ErrorCode.BreakerOpen });
    assert.is(breakerStats(pool).length, 1, 'one node for every client of the pool');
    server.resume();
    await Promise.all(stuck);
  } finally {
    server.resume();
  }
  await waitFor('breaker closed by the probe', () => events.at(-1) === 'closed', 5000);
  assert.is(await pool.get('pool:k'), 'v');
});

test('no timer while idle: the sweep runs only while a command is in flight, on a client and a pool', async () => {
  const [hk] = await e2e.sdks(1);
  const ledger = timerLedger(/sdk\/(src|dist)\/(node-redis|redis)\//);
  try {
    const redis = withHotKeys(createClient({ url: server.url }), hk!, { tracking: false });
    redis.on('error', () => {});
    opened.push(redis);
    const connecting = redis.connect();
    const queued = redis.get('idle:1'); // sent before the connection is up: node-redis queues it
    await connecting;
    assert.is(await queued, null);
    const pool = withHotKeys(await connected(createClientPool({ url: server.url })), hk!, { tracking: false });
    for (let i = 0; i < 3; i++) await Promise.all([redis.get(`idle:${i}`), pool.get(`idle:${i}`), redis.ping()]);
    assert.ok(breakerStats(redis).length === 1 && breakerStats(pool).length === 1, 'both watched their commands');
    assert.is(ledger.live.size, 0, 'no timer of the breaker once nothing is in flight');
    assert.is(ledger.counts.intervals, 0, 'and never an interval');
  } finally {
    ledger.restore();
  }
});

test('error replies are answers: WRONGTYPE never opens the breaker; breaker: false has none; bad options', async () => {
  const [hk] = await e2e.sdks(1);
  const redis = withHotKeys(await connected(createClient({ url: server.url })), hk!, { tracking: false });
  const bare = withHotKeys(await connected(createClient({ url: server.url })), hk!, {
    tracking: false,
    breaker: false,
  });
  await redis.lPush('list:1', 'x');
  for (let i = 0; i < 20; i++) assert.match((await outcome(redis.get('list:1'))).code ?? '', /WRONGTYPE/);
  assert.is(breakerStats(redis)[0]!.state, 'closed');
  assert.is(breakerStats(redis)[0]!.failures, 0);
  await bare.get('x');
  assert.equal(breakerStats(bare), []);
  assert.throws(() => breakerStats(createClient()), /not wrapped/);
  for (const [breaker, field] of [
    [{ failures: 0 }, 'breaker.failures'],
    [{ coolDownMs: 1.5 }, 'breaker.coolDownMs'],
    [{ timeoutMs: '100' }, 'breaker.timeoutMs'],
    ['on', 'breaker must be'],
  ] as const) {
    const fresh = createClient({ url: server.url });
    const proto = Object.getPrototypeOf(fresh);
    assert.throws(
      () => withHotKeys(fresh, hk!, { breaker: breaker as never }),
      (e: Error) => e instanceof TypeError && e.message.includes(field),
      field,
    );
    assert.is(Object.getPrototypeOf(fresh), proto, 'nothing hooked on a refused client');
  }
});

test.run();
