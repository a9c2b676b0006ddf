/**
 * RedisRules (hub/src/cluster/redis-rules.ts) against a real redis-server: reads that overlap — a
 * poll and a change notice's re-read — apply in the order Redis answered them, whatever order
 * their replies are handled in.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Rule } from '@hotkey/sdk/rules';
import { createRedisClient, type Redis } from '../../hub/src/cluster/redis-client.ts';
import { RedisRules } from '../../hub/src/cluster/redis-rules.ts';
import { silentLogger } from '../../hub/src/core/logger.ts';
import { RedisServer } from '../support/redis-server.ts';
import { within } from '../support/wait.ts';

let server: RedisServer;
let client: Redis;
let prefixes = 0;

test.before(async () => {
  server = await RedisServer.start();
  client = createRedisClient({ url: server.url, name: 'rules-test' });
  await within('the client to connect', client.connect(), 5000);
});

test.after(async () => {
  client?.disconnect();
  await server?.stop();
});

/** A RedisRules on a fresh prefix whose app `shop` holds `old:*` in Redis and here; every change it reports. */
async function rulesWithOld(): Promise<{ rules: RedisRules; key: string; changes: string[] }> {
  const prefix = `t${++prefixes}:`;
  const rules = new RedisRules({ client, prefix, apps: {}, logger: silentLogger });
  await client.hset(`${prefix}rules`, 'shop', JSON.stringify([{ match: 'old:*', threshold: 5 }]));
  await rules.sync();
  const changes: string[] = [];
  rules.onChange((_app, list: Rule[]) => changes.push(list.map((r) => r.match).join(',')));
  return { rules, key: `${prefix}rules`, changes };
}

test('a poll answered before a change does not put the old rules back after the change was applied', async () => {
  const { rules, key, changes } = await rulesWithOld();
  const poll = rules.sync(); // its HGETALLs reach Redis before the write
  void client.hset(key, 'shop', JSON.stringify([{ match: 'new:*', threshold: 7 }]));
  const notice = rules.syncApp('shop'); // the change notice's re-read, after it
  await within('both reads', Promise.all([poll, notice]), 5000);
  assert.is(rules.rules('shop')[0]?.match, 'new:*');
  assert.equal(changes, ['new:*'], 'one change, never back to the old rules');
});

test.run();
