/**
 * The ioredis breaker times Redis's reply, not a write's promise: a write settles only after the
 * hub acked its invalidation, which an ownership fence holds back for seconds on a healthy Redis.
 * Real redis-server; a protocol peer standing in for the hub acks each invalidation 600 ms late.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { withHotKeys, hotKeyStats } from '../ioredis.ts';
import { startAckingPeer, type AckingPeer } from '../redis/acking-peer.test-helper.ts';
import { within } from '../../../test/support/wait.ts';

let fx: AckingPeer;
let redis: Redis;

test.before(async () => {
  fx = await startAckingPeer(undefined, 600);
  redis = withHotKeys(new Redis(fx.server.url, { lazyConnect: true }), fx.hk, {
    breaker: { failures: 2, timeoutMs: 200, coolDownMs: 5000 },
  });
  await redis.connect();
});

test.after(async () => {
  redis.disconnect();
  await fx.close();
});

test('writes whose acks come after the breaker timeout leave the breaker closed', async () => {
  for (let i = 0; i < 4; i++) {
    const t0 = performance.now();
    await within(`SET ${i}`, redis.set(`breaker:ack:${i}`, 'v'), 5000);
    assert.ok(performance.now() - t0 >= 500, 'the write waited for its late ack');
  }
  const [node] = hotKeyStats(redis).breakers;
  assert.ok(node !== undefined, 'a breaker for the server');
  assert.is(node!.state, 'closed', 'no late ack counted as a timeout');
  assert.is(await within('GET after the writes', redis.get('breaker:ack:0'), 2000), 'v');
});

test.run();
