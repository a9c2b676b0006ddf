/**
 * RedisRules (hub/src/cluster/redis-rules.ts) against a real redis-server: reads that overlap — a
 * poll and a change notice's re-read — apply in the order Redis answered them, whatever order
 * their replies are handled in; and the rule field `push` is stored under its former name
 * `share`, which hubs of the previous minor version read, and read back under either.
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

test('push is stored as share (hubs of the previous minor version read it) and read back from either', async () => {
  const { rules, key } = await rulesWithOld();
  const stored = await rules.set('shop', [{ match: 'p:*', threshold: 9, push: true }]);
  assert.is(stored[0]?.push, true);
  const raw = JSON.parse((await client.hget(key, 'shop'))!) as Record<string, unknown>[];
  assert.is(raw[0]?.share, true);
  assert.not.ok('push' in raw[0]!, 'a hub of the previous minor version refuses a field it does not know');
  // what such a hub stored: share, read here as push
  await client.hset(key, 'shop', JSON.stringify([{ match: 'q:*', threshold: 9, share: true }]));
  await within('the re-read', rules.syncApp('shop'), 5000);
  assert.equal(
    rules.rules('shop').map((r) => [r.match, r.push, r.share]),
    [['q:*', true, undefined]],
  );
});

test.run();
