/**
 * Write-hot detection end to end: a real hub, real SDK clients and a real redis-server behind the
 * ioredis wrapper. Writes through the wrapper count for rules of kind 'write' / 'any', reads for
 * 'read' / 'any'; the promotion carries the kind to the SDK's promote event and hotKind().
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import type { PromoteInfo } from '@hotkey/sdk';
import { flushWrites, hotKeyStats, withHotKeys } from '@hotkey/sdk/ioredis';
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
          { match: 'ctr:*', threshold: 50, kind: 'write', coalesce: true, coalesceMs: 50, cache: false },
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
  // hotKind as the promotion lands: by the time the slower keys turn hot on a loaded machine, the
  // first may have cooled and been demoted already
  const kindThen = new Map<string, string | undefined>();
  hk!.on('promote', (key, info) => {
    promoted.set(key, info);
    kindThen.set(key, hk!.hotKind(key));
  });
  for (let i = 0; i < 200; i++) await redis.get('stock:read-only');
  for (let i = 0; i < 200; i++) await redis.incr('stock:1');
  for (let i = 0; i < 200; i++) await redis.set('page:written', String(i));
  for (let i = 0; i < 100; i++) {
    await redis.incr('likes:1');
    await redis.get('likes:1');
  }
  await waitFor('stock:1 and likes:1 promoted', () => promoted.has('stock:1') && promoted.has('likes:1'), 3000);
  assert.is(promoted.get('stock:1')!.kind, 'write');
  assert.is(kindThen.get('stock:1'), 'write');
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

async function incrCalls(r: Redis): Promise<number> {
  const info = await r.info('commandstats');
  const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return calls('incr') + calls('incrby');
}

test('coalescing: INCRs of a write-hot key merge into few INCRBYs, replies form one serial history', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const redis = withHotKeys(new Redis(server.port, '127.0.0.1'), hk!, { tracking: false });
  const plain = new Redis(server.port, '127.0.0.1');
  opened.push(redis, plain);
  await plain.set('ctr:1', 1000);
  for (let i = 0; i < 100; i++) await redis.incr('ctr:1');
  await waitFor('ctr:1 write-hot', () => hk!.hotKind('ctr:1') === 'write', 3000);
  const base = Number(await plain.get('ctr:1'));
  const before = await incrCalls(plain);
  const replies: number[] = [];
  for (let round = 0; round < 10; round++) {
    const batch = await Promise.all(Array.from({ length: 100 }, (_, i) => redis.incrby('ctr:1', 1 + (i % 3))));
    replies.push(...batch);
  }
  const commands = (await incrCalls(plain)) - before;
  const added = Array.from({ length: 100 }, (_, i) => 1 + (i % 3)).reduce((a, b) => a + b, 0) * 10;
  assert.is(Number(await plain.get('ctr:1')), base + added, 'every increment landed once');
  assert.ok(commands <= 20, `${commands} Redis INCR commands for 1000 increments`);
  // one serial history: sorted replies step by exactly each caller's increment
  assert.is(new Set(replies).size, replies.length, 'no two callers saw the same value');
  assert.is(Math.max(...replies), base + added);
  assert.ok(hotKeyStats(redis).writeHot.coalescedIncrements >= 1000);
  // flushed before QUIT: nothing waits past the connection's end
  const last = redis.incr('ctr:1');
  await redis.quit();
  assert.is(await last, base + added + 1);
  assert.is(Number(await plain.get('ctr:1')), base + added + 1);
  await flushWrites(redis); // nothing open: resolves at once
});

test('coalescing: hk.close() sends the merged increments at once', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const redis = withHotKeys(new Redis(server.port, '127.0.0.1'), hk!, { tracking: false });
  opened.push(redis);
  for (let i = 0; i < 100; i++) await redis.incr('ctr:2');
  await waitFor('ctr:2 write-hot', () => hk!.hotKind('ctr:2') === 'write', 3000);
  const before = hotKeyStats(redis).writeHot.coalescedFlushes;
  const pending = [redis.incr('ctr:2'), redis.incr('ctr:2')];
  await hk!.close();
  assert.is(hotKeyStats(redis).writeHot.coalescedFlushes, before + 1, 'sent by close, not by the window');
  const [a, b] = await Promise.all(pending);
  assert.is(b, a! + 1);
  assert.is(Number(await redis.get('ctr:2')), b);
});

test.run();
