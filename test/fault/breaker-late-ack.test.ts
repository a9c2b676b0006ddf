/**
 * The ioredis breaker times Redis's reply, not a write's promise. A wrapped write settles once
 * the hub acknowledged its invalidation (awaitInvalidation, the default), which a slow or
 * stopped hub (or an ownership fence) holds back far beyond the breaker's timeout while Redis
 * answered at once: that must not open a healthy node's breaker. A real hub process frozen with
 * SIGSTOP holds the acks back; a real redis-server frozen the same way must still open it. The
 * node-redis adapter's breaker (a layer under its hook, timing the raw reply) is held to the same.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { HotKeyClient } from '@hotkey/sdk';
import { hotKeyStats, withHotKeys } from '@hotkey/sdk/ioredis';
import { breakerStats, withHotKeys as withNodeRedis } from '@hotkey/sdk/node-redis';
import { createClient } from 'redis';
import { outcome, STUCK_MS } from '../support/breaker.ts';
import { HubProcess, writeConfig } from '../support/hub-process.ts';
import { RedisServer } from '../support/redis-server.ts';
import { delay, waitFor, within } from '../support/wait.ts';

/** the breaker's timeout; the hub stays frozen for FREEZE_MS, several of them */
const TIMEOUT_MS = 200;
const FREEZE_MS = 4 * TIMEOUT_MS;
const config = { apps: { shop: { rules: [{ match: '*', threshold: 1_000_000 }] } } };

let hub: HubProcess;
let server: RedisServer;
let hk: HotKeyClient;
const opened: Array<{ disconnect(): unknown }> = [];

test.before(async () => {
  [hub, server] = await Promise.all([
    HubProcess.start({ args: ['--config', writeConfig(config, 'hotkey-late-ack-')] }),
    RedisServer.start(),
  ]);
  // the link outlives the freeze: the acks come late, on the same socket
  hk = new HotKeyClient({ app: 'shop', hubs: [hub.url], livenessTimeoutMs: 10_000, invalidateTimeoutMs: 10_000 });
  await hk.ready({ signal: AbortSignal.timeout(5000) });
});

test.after(async () => {
  for (const r of opened) r.disconnect();
  await hk?.close();
  server?.resume();
  await server?.stop();
  if (hub) {
    hub.child.kill('SIGCONT');
    await hub.stop('SIGKILL');
  }
});

function wrapped(): Redis {
  const redis = withHotKeys(new Redis(server.port, '127.0.0.1'), hk, {
    tracking: false,
    breaker: { failures: 2, coolDownMs: 5000, timeoutMs: TIMEOUT_MS },
  });
  opened.push(redis);
  return redis;
}

/** Four writes of `prefix:<i>` sent while the hub is frozen for FREEZE_MS: they settle after the thaw, with their acks. */
async function writesWhileTheHubIsFrozen(set: (key: string, value: string) => Promise<unknown>, prefix: string) {
  await set(`${prefix}:warm`, 'v'); // connected, and one ack round trip done
  hub.child.kill('SIGSTOP');
  const started = performance.now();
  let writes: Promise<unknown[]>;
  try {
    writes = Promise.all(Array.from({ length: 4 }, (_, i) => set(`${prefix}:${i}`, `v${i}`)));
    await delay(FREEZE_MS);
  } finally {
    hub.child.kill('SIGCONT');
  }
  assert.equal(await within('the writes, acked after the thaw', writes, 10_000), ['OK', 'OK', 'OK', 'OK']);
  const tookMs = performance.now() - started;
  assert.ok(tookMs >= FREEZE_MS, `the writes waited for their acks (${Math.round(tookMs)} ms)`);
  assert.is(await raw().get(`${prefix}:3`), 'v3');
}

test('ioredis: writes whose acks a frozen hub holds back for 4× the timeout leave the breaker closed', async () => {
  const redis = wrapped();
  await writesWhileTheHubIsFrozen((key, value) => redis.set(key, value), 'late');
  const [node] = hotKeyStats(redis).breakers;
  assert.is(node?.state, 'closed');
  assert.is(node?.failures, 0, 'Redis answered each write at once: no timeout counted');
});

test('node-redis: the same writes leave its breaker closed', async () => {
  const client = withNodeRedis(createClient({ url: server.url }), hk, {
    tracking: false,
    breaker: { failures: 2, coolDownMs: 5000, timeoutMs: TIMEOUT_MS },
  });
  opened.push({ disconnect: () => client.destroy() });
  await client.connect();
  await writesWhileTheHubIsFrozen((key, value) => client.set(key, value), 'late-nr');
  const [node] = breakerStats(client);
  assert.is(node?.state, 'closed');
  assert.is(node?.failures, 0);
});

test('a frozen redis-server still opens the breaker for writes (their reply never comes)', async () => {
  const redis = wrapped();
  await redis.set('frozen:warm', 'v');
  server.pause();
  try {
    const stuck = [0, 1].map((i) => outcome(redis.set(`frozen:${i}`, 'v'), STUCK_MS));
    await waitFor('breaker open', () => hotKeyStats(redis).breakers[0]?.state === 'open', 5000);
    assert.equal(await outcome(redis.set('frozen:more', 'v')), { code: 'HK_ERR_BREAKER_OPEN' });
    server.resume();
    assert.equal(await Promise.all(stuck), [{ value: 'OK' }, { value: 'OK' }]);
  } finally {
    server.resume();
  }
});

/** a plain client on the test's server, to read what the writes wrote */
function raw(): Redis {
  const r = new Redis(server.port, '127.0.0.1');
  opened.push(r);
  return r;
}

test.run();
