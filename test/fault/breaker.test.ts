/**
 * The ioredis integration's circuit breaker against a real redis-server frozen with SIGSTOP
 * (connections stay open, nothing answers — the case where commands would queue forever):
 * five unanswered commands open it, later commands fail fast with HK_ERR_BREAKER_OPEN while the
 * server is still frozen, a hot key is still served from memory and its load is refused at once
 * (the rejection the client's stale-if-error falls back on), the state shows in hotKeyStats()
 * and 'breaker' events, and after SIGCONT the half-open probe closes it. Redis error replies are
 * the node answering: they never open it, and neither do replies that arrived while the process
 * itself was stalled (read after the breaker's timer on waking).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { ErrorCode } from '@hotkey/sdk';
import { hotKeyStats, withHotKeys } from '@hotkey/sdk/ioredis';
import { metricsText } from '@hotkey/sdk/metrics';
import { assertOpenSeries, breakerRules, outcome, STUCK_MS, thaw } from '../support/breaker.ts';
import { hubInProcess } from '../support/e2e.ts';
import { RedisServer } from '../support/redis-server.ts';
import { delay, waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, { config: { apps: { shop: { rules: breakerRules(20) } } } });
let server: RedisServer;
const opened: Redis[] = [];

test.before(async () => {
  server = await RedisServer.start();
});
test.after(async () => {
  server?.resume();
  for (const r of opened) r.disconnect();
  await server?.stop();
});

test('SIGSTOP: five timeouts open the breaker, then reads fail fast; hot keys stay in memory; SIGCONT closes it', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const events: string[] = [];
  hk!.on('breaker', (e) => events.push(e.state));
  const redis = withHotKeys(new Redis(server.port, '127.0.0.1'), hk!, {
    tracking: false,
    breaker: { failures: 5, coolDownMs: 500, timeoutMs: 200 },
  });
  opened.push(redis);
  await redis.set('hot:1', 'cached');
  await redis.set('hot:2', 'dropped');
  await redis.set('stale:1', 'last');
  for (let i = 0; i < 50; i++) await Promise.all([redis.get('hot:1'), redis.get('hot:2'), redis.get('stale:1')]);
  await waitFor('hot keys', () => hk!.isHot('hot:1') && hk!.isHot('hot:2') && hk!.isHot('stale:1'), 3000);
  assert.is(await redis.get('stale:1'), 'last');
  assert.is(await redis.get('hot:1'), 'cached');
  assert.is(await redis.get('hot:2'), 'dropped');

  server.pause();
  try {
    const stuck = Array.from({ length: 5 }, (_, i) => outcome(redis.get(`cold:${i}`), STUCK_MS));
    await waitFor('breaker open', () => events.includes('open'), 5000);
    assert.is(hotKeyStats(redis).breakers[0]!.state, 'open');
    // still frozen: these fail at once instead of queueing behind the stuck ones
    assert.equal(await outcome(redis.get('cold:other')), { code: ErrorCode.BreakerOpen });
    assert.equal(await outcome(redis.set('cold:w', '1')), { code: ErrorCode.BreakerOpen });
    // a hot key's cached value is served from memory; a hot key that must load is refused at once
    assert.equal(await outcome(redis.get('hot:1')), { value: 'cached' });
    hk!.dropLocal('hot:2');
    assert.equal(await outcome(redis.get('hot:2')), { code: ErrorCode.BreakerOpen });
    // past its cacheTtlMs (300 ms) the reload is refused at once and the last value is served
    await delay(400);
    assert.equal(await outcome(redis.get('stale:1')), { value: 'last' });
    assert.ok(hk!.stats().staleServed > 0, 'served by stale-if-error');
    const stats = hotKeyStats(redis).breakers[0]!;
    assert.ok(stats.rejected >= 3 && stats.opened === 1 && stats.failures >= 5, JSON.stringify(stats));
    assertOpenSeries(hk!, 'ioredis', stats); // the same state through the SDK's metrics hook, one series per node
    assert.ok(server.running, 'all of this while the server is frozen');
    await thaw(() => server.resume(), stuck, events);
  } finally {
    server.resume();
  }
  assert.match(metricsText(hk!), /^hotkey_sdk_ioredis_breaker_open\{app="shop",node="[^"]+"\} 0$/m, 'closed again');
  assert.is(await redis.get('hot:2'), 'dropped');
  assert.is(await redis.get('cold:other'), null);
});

test('a stalled event loop (busy CPU, long GC): replies that arrived meanwhile are answers, not timeouts', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const redis = withHotKeys(new Redis(server.port, '127.0.0.1'), hk!, {
    tracking: false,
    breaker: { failures: 5, coolDownMs: 5000, timeoutMs: 200 },
  });
  opened.push(redis);
  await redis.ping();
  for (let round = 0; round < 3; round++) {
    const replies = Array.from({ length: 10 }, (_, i) => redis.get(`stall:${round}:${i}`));
    // the process is off the CPU for 3× timeoutMs while Redis answers at once: on waking, the
    // breaker's timer runs before the replies waiting in the socket are read
    const until = performance.now() + 600;
    while (performance.now() < until) {
      /* stalled: no event-loop turn */
    }
    assert.equal(await Promise.all(replies), Array(10).fill(null));
  }
  await delay(250); // a sweep after the replies: none of them is overdue any more
  const [node] = hotKeyStats(redis).breakers;
  assert.is(node?.state, 'closed');
  // each round's 10 replies were overdue on waking; a reply slower than timeoutMs on a busy
  // machine is a real timeout, but never 5 in a row of ones that had arrived
  assert.ok((node?.failures ?? 0) < 5, `${node?.failures} answered commands counted as timeouts`);
  assert.equal(await outcome(redis.get('stall:after')), { value: null }, 'reads are served, not refused');
});

test('error replies are answers: WRONGTYPE never opens the breaker; breaker: false has none', async () => {
  const [hk] = await e2e.sdks(1);
  const redis = withHotKeys(new Redis(server.port, '127.0.0.1'), hk!, { tracking: false });
  const bare = withHotKeys(new Redis(server.port, '127.0.0.1'), hk!, { tracking: false, breaker: false });
  opened.push(redis, bare);
  await redis.lpush('list:1', 'x');
  for (let i = 0; i < 20; i++) assert.match((await outcome(redis.get('list:1'))).code ?? '', /WRONGTYPE/);
  assert.is(hotKeyStats(redis).breakers[0]!.state, 'closed');
  assert.is(hotKeyStats(redis).breakers[0]!.failures, 0);
  await bare.get('x');
  assert.equal(hotKeyStats(bare).breakers, []);
  assert.throws(() => withHotKeys(new Redis({ lazyConnect: true }), hk!, { breaker: { failures: 0 } }), /failures/);
});

test.run();
