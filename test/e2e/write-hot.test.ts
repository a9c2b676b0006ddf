/**
 * Write-hot detection end to end: a real hub, real SDK clients and a real redis-server behind the
 * ioredis wrapper. Writes through the wrapper count for rules of kind 'write' / 'any', reads for
 * 'read' / 'any'; the promotion carries the kind to the SDK's promote event and hotKind().
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import type { PromoteInfo } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { hubInProcess } from '../support/e2e.ts';
import { RedisServer } from '../support/redis-server.ts';
import { delay, waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: {
        rules: [
          { match: 'stock:*', threshold: 50, kind: 'write' },
          { match: 'likes:*', threshold: 50, kind: 'any' },
          { match: '*', threshold: 50 },
        ],
      },
    },
  },
});
let server: RedisServer;
const opened: Redis[] = [];

test.before(async () => {
  server = await RedisServer.start();
});
test.after(async () => {
  for (const r of opened) r.disconnect();
  await server?.stop();
});

test('writes make a write-rule key hot and reads do not; the promotion says write', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const redis = withHotKeys(new Redis(server.port, '127.0.0.1'), hk!, { tracking: false });
  opened.push(redis);
  const promoted = new Map<string, PromoteInfo>();
  hk!.on('promote', (key, info) => promoted.set(key, info));
  for (let i = 0; i < 200; i++) await redis.get('stock:read-only');
  for (let i = 0; i < 200; i++) await redis.incr('stock:1');
  for (let i = 0; i < 200; i++) await redis.set('page:written', String(i));
  for (let i = 0; i < 100; i++) {
    await redis.incr('likes:1');
    await redis.get('likes:1');
  }
  await waitFor('stock:1 and likes:1 promoted', () => promoted.has('stock:1') && promoted.has('likes:1'), 3000);
  assert.is(promoted.get('stock:1')!.kind, 'write');
  assert.is(hk!.hotKind('stock:1'), 'write');
  assert.is(promoted.get('likes:1')!.kind, 'any');
  await delay(300); // two more reports would have carried them
  assert.not.ok(hk!.isHot('stock:read-only'), 'reads do not count for a write rule');
  assert.not.ok(hk!.isHot('page:written'), 'writes do not count for a read rule');
  assert.is(hk!.hotKind('page:written'), undefined);
});

test('a read promotion says read; a new SDK learns both kinds from the snapshot', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  for (let i = 0; i < 200; i++) {
    await hk!.get('page:1', () => 'v');
    hk!.track('stock:2', 'write');
  }
  await waitFor('page:1 and stock:2 hot', () => hk!.isHot('page:1') && hk!.isHot('stock:2'), 3000);
  assert.is(hk!.hotKind('page:1'), 'read');
  assert.is(hk!.hotKind('stock:2'), 'write');
  const [late] = await e2e.sdks(1);
  await waitFor('snapshot applied', () => late!.isHot('stock:2') && late!.isHot('page:1'), 3000);
  assert.is(late!.hotKind('stock:2'), 'write');
  assert.is(late!.hotKind('page:1'), 'read');
  assert.throws(() => hk!.track('k', 'delete' as never), /kind/);
});

test.run();
