/**
 * A Redis restart while the ioredis integration's circuit breaker is open: the client must come
 * back. ioredis reconnects with a handshake of its own (the ready check's INFO, sent through the
 * same hooked sendCommand as the user's commands); a breaker that refused it made ioredis drop the
 * connection and start again, while the half-open probe's PING waited in the offline queue of a
 * client that could never become ready: the breaker opened again, for good, though Redis was up.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { hotKeyStats, withHotKeys } from '@hotkey/sdk/ioredis';
import { breakerRules, outcome } from '../support/breaker.ts';
import { hubInProcess } from '../support/e2e.ts';
import { RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, { config: { apps: { shop: { rules: breakerRules(20) } } } });
let server: RedisServer | undefined;
let redis: Redis | undefined;

test.after(async () => {
  redis?.disconnect();
  await server?.stop();
});

test('Redis back while the breaker is open: the client reconnects, the probe closes the breaker, commands are served', async () => {
  server = await RedisServer.start();
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const events: string[] = [];
  hk!.on('breaker', (e) => events.push(e.state));
  // reconnect attempts every 100 ms: the first ones after the restart fall within the open breaker's cool-down
  const client = new Redis({ port: server.port, host: '127.0.0.1', retryStrategy: () => 100 });
  client.on('error', () => undefined);
  redis = withHotKeys(client, hk!, { tracking: false, breaker: { failures: 3, coolDownMs: 1500, timeoutMs: 200 } });
  await redis.set('k', 'v1');

  await server.stop();
  // queued while Redis is away, unanswered past timeoutMs: three open the breaker
  const queued = Array.from({ length: 3 }, (_, i) => outcome(redis!.get(`cold:${i}`), 5000));
  await waitFor('the breaker open', () => hotKeyStats(redis!).breakers[0]?.state === 'open', 5000);
  await server.restart();

  await waitFor('the client ready again', () => redis!.status === 'ready', 8000, 20);
  await waitFor('the breaker closed by its probe', () => hotKeyStats(redis!).breakers[0]?.state === 'closed', 8000);
  // the restarted server starts empty (nothing is persisted): a write and a read, both served
  assert.equal(await outcome(redis.set('k', 'v2')), { value: 'OK' });
  assert.equal(await outcome(redis.get('k')), { value: 'v2' });
  assert.ok(events.includes('open') && events.at(-1) === 'closed', events.join(' → '));
  await Promise.all(queued);
});

test.run();
