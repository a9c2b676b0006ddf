/**
 * A config reload in a Redis cluster (RedisCoordinator.reconfigure against a real redis-server):
 * the file's tokens apply where Redis holds none, a new app is seeded into Redis with the file's
 * rules, and rules Redis already holds keep winning over the file.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { DEFAULT_RULE, type Rule } from '@hotkey/sdk/rules';
import { RedisCoordinator } from '../../hub/src/cluster/redis-coordinator.ts';
import { silentLogger } from '../../hub/src/core/logger.ts';
import { RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait.ts';

let redis: RedisServer;
let raw: Redis;
const rule = (match: string, threshold: number): Rule => ({ ...DEFAULT_RULE, match, threshold });

test.before(async () => {
  redis = await RedisServer.start();
  raw = new Redis(redis.url, { maxRetriesPerRequest: 1 });
});
test.after(async () => {
  raw?.disconnect();
  await redis?.stop();
});

test('reconfigure: tokens where Redis has none, new apps seeded, Redis-held rules stay', async () => {
  const prefix = `hk-reconf-${process.pid}:`;
  const c = new RedisCoordinator({
    url: redis.url,
    nodeId: 'hub-r',
    prefix,
    apps: { shop: { token: 'one', rules: [rule('item:*', 50)] } },
    logger: silentLogger,
  });
  try {
    await c.start({ id: 'hub-r', url: 'ws://127.0.0.1:1/ws' });
    await waitFor('shop seeded into Redis', async () => (await raw.hget(`${prefix}rules`, 'shop')) !== null);
    await waitFor('synchronised with Redis', () => c.health().state === 'ok');
    const heard: string[] = [];
    c.onRules((app) => heard.push(app));

    c.reconfigure({
      shop: { token: 'two', rules: [rule('item:*', 70)] },
      cart: { rules: [rule('c:*', 9)] },
    });
    assert.equal(c.app('shop'), { token: 'two' }, 'the file token applies: Redis holds none');
    assert.is(c.rules('shop')[0]?.threshold, 50, 'Redis holds shop rules: they win over the file');
    assert.is(c.rules('cart')[0]?.threshold, 9, 'a new app takes the file rules');
    assert.ok(heard.includes('cart') && !heard.includes('shop'));
    const stored = await waitFor('cart seeded into Redis', () => raw.hget(`${prefix}rules`, 'cart'));
    assert.is((JSON.parse(stored) as Rule[])[0]?.threshold, 9);

    await raw.hset(`${prefix}tokens`, 'shop', 'from-redis');
    await waitFor('the Redis token read', () => c.app('shop')?.token === 'from-redis');
    c.reconfigure({ shop: { token: 'three' } });
    assert.equal(c.app('shop'), { token: 'from-redis' }, 'a token in Redis wins over the file');
  } finally {
    await c.close();
  }
});

test.run();
