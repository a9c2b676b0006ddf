/**
 * The node-redis adapter's tracking survives a Redis restart: its own connections (node-redis
 * clients without a reconnect strategy of their own, node-redis/connection.ts) see the server
 * close them — node-redis reports that with 'error' alone, no 'end' — and come back, so that a
 * hot key is cached again and an outside write drops it again. Real redis-server, restarted on
 * its port (its data is lost: the test writes again after).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from '../support/node-redis-lib.ts';
import type { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/node-redis';
import { hubInProcess } from '../support/e2e.ts';
import { promoteInProcess } from '../support/promote.ts';
import { RedisServer } from '../support/redis-server.ts';
import { destroyAll, servedLocally } from '../support/node-redis.ts';
import { delay, waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: { rules: [{ match: '*', threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs: 600_000 }] },
    },
  },
});

let server: RedisServer;
const opened: Array<{ destroy(): void }> = [];

async function client() {
  const c = createClient({ url: server.url });
  c.on('error', () => {});
  opened.push(c);
  await c.connect();
  return c;
}

test.before(async () => {
  server = await RedisServer.start();
});
test.after(async () => {
  destroyAll(opened);
  await delay(20);
  await server?.stop();
});

test('after a Redis restart the tracking connections come back: the hot key is cached again and an outside write drops it', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const plain = await client();
  const c = withHotKeys(await client(), hk as HotKeyClient);
  const key = 'nr:restart';
  const gets = async () => Number(/^cmdstat_get:calls=(\d+)/m.exec(await plain.info('commandstats'))?.[1] ?? 0);
  const names = async () => String(await plain.sendCommand(['CLIENT', 'LIST']));
  await plain.set(key, 'v0');
  assert.is(await c.get(key), 'v0');
  await promoteInProcess(e2e.hub, 'shop', key, [hk!]);
  await servedLocally(c, key, 'v0', gets);

  const restartedAt = performance.now();
  await server.restart();
  // both node-redis clients of the test reconnect by themselves (their default strategy)
  await waitFor('the clients back', async () => plain.isReady && c.isReady, 10_000);
  await plain.set(key, 'v1');
  await waitFor(
    'the tracking connections back',
    async () => {
      const list = await names();
      return list.includes('name=hotkey-tracking') && list.includes('name=hotkey-invalidations');
    },
    10_000,
  );
  await servedLocally(c, key, 'v1', gets, 10_000);
  console.log(`# cached again ${Math.round(performance.now() - restartedAt)} ms after the restart began`);
  // a write by a client without the SDK: only Redis tracking can drop the cached value (its TTL is 600 s)
  await plain.set(key, 'v2');
  await waitFor('the outside write heard', async () => (await c.get(key)) === 'v2', 5000);
});

test('tracked prefixes after a Redis restart: the watch connection comes back and a surge takes its first read again', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const plain = await client();
  const c = withHotKeys(await client(), hk as HotKeyClient, { tracking: { prefixes: ['flash:'] } });
  /** reads of new keys under the prefix until one is kept: the broadcast session is live */
  const keptOnce = (tag: string) =>
    waitFor(
      `${tag}: a read kept`,
      async () => {
        const kept = hk!.stats().recentReads;
        try {
          await c.get(`flash:probe-${tag}-${performance.now()}`);
        } catch {
          return false; // reconnecting
        }
        return hk!.stats().recentReads > kept;
      },
      10_000,
    );
  await keptOnce('before');
  await server.restart();
  await waitFor('the clients back', async () => plain.isReady && c.isReady, 10_000);
  await plain.set('flash:after', 'a');
  await keptOnce('after');
  const used = hk!.stats().recentReadsUsed;
  assert.is(await c.get('flash:after'), 'a');
  const got = await Promise.all(Array.from({ length: 50 }, () => c.get('flash:after')));
  for (const v of got) assert.is(v, 'a');
  assert.ok(hk!.isHot('flash:after'));
  assert.is(hk!.stats().recentReadsUsed - used, 1, "the surge's load took the first read");
});

test.run();
