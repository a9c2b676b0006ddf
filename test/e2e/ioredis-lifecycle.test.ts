/**
 * What a wrapped ioredis client holds besides the user's connection, and when: no timer of the
 * adapter outlives the commands it watches (a client in the offline queue, one that connects and
 * disconnects); no connection of the adapter's own before the client's first read (keys hot or
 * not), tracking connections opened by that read so that a later promotion's first load is
 * tracked and cached (Redis answers one read); no
 * command of the adapter's written after the user's QUIT; a hot read while the client connects
 * kept in call order; a stubbed clock; RESP3 clients with replyMapping 'resp3'; and bad input: objects that are not
 * ioredis clients, a client wrapped by another HotKeyClient, a wrapped client after `hk.close()`.
 * A real hub process and a real redis-server.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { HotKeyClient } from '@hotkey/sdk';
import { counter, withHotKeys } from '@hotkey/sdk/ioredis';
import { commandCalls } from '../support/commandstats.ts';
import { MANUAL_RULE } from '../support/promoting-hub.ts';
import { redisHub, type RedisHub } from '../support/redis-hub.ts';
import { freePort } from '../support/redis-server.ts';
import { delay, waitFor, within } from '../support/wait.ts';
import { assertHookedOnce, assertPlainAfterClose } from '../support/wrapper-checks.ts';
import { timerLedger } from '../support/timer-ledger.ts';

/** the ioredis adapter's timers, and the Redis core's it runs (its breaker's sweeps and probes) */
const ADAPTER = /sdk\/(src|dist)\/(ioredis|redis)\//;

let fixture: RedisHub;
let hk: HotKeyClient;
let plain: Redis;

test.before(async () => {
  fixture = await redisHub(
    [
      MANUAL_RULE,
      // read-hot keys served by replica keys, not cached: a write deletes its copies (replicas.ts)
      { ...MANUAL_RULE, match: 'rep:*', cache: false },
    ],
    'hotkey-lifecycle-',
  );
  ({ hk, plain } = fixture);
});

test.after(async () => {
  await fixture?.close();
});

const client = (options: { lazyConnect?: boolean } = {}): Redis => fixture.client(options);
const promote = (key: string, on = hk): Promise<void> => fixture.promote(key, on);

/** GETs and CLIENT CACHING calls Redis answered so far (every client of the server). */
async function redisCalls(): Promise<{ get: number; caching: number }> {
  const info = await plain.info('commandstats');
  const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return { get: calls('get'), caching: calls('client\\|caching') };
}
const redisGets = (): Promise<number> => commandCalls(plain, 'get');

/** The adapter's tracking readers on the server whose CLIENT TRACKING is on (CLIENT LIST flag t). */
async function trackingReaders(): Promise<string[]> {
  const list = (await plain.client('LIST')) as string;
  return list.split('\n').filter((l) => / name=hotkey-tracking /.test(l) && / flags=\w*t/.test(l));
}

/** Connections of the adapter's own (tracking) on the server. */
async function ownConnections(): Promise<number> {
  const list = (await plain.client('LIST')) as string;
  return list.split('\n').filter((l) => / name=hotkey-(tracking|invalidations) /.test(l)).length;
}

test('a stubbed setTimeout that returns no handle (a test double of the clock) breaks no command', async () => {
  const c = withHotKeys(client(), hk);
  await c.ping();
  const g = globalThis as Record<string, any>;
  const saved = g.setTimeout;
  const calls: number[] = [];
  // what `sinon.stub(global, 'setTimeout')` does: records the call, schedules nothing, returns undefined
  g.setTimeout = (_fn: unknown, ms?: number) => void calls.push(ms ?? 0);
  try {
    assert.is(await c.set('lc:stubbed', 's'), 'OK');
    assert.is(await c.get('lc:stubbed'), 's');
  } finally {
    g.setTimeout = saved;
    c.disconnect(); // its read opened tracking connections: they close with it
  }
  assert.ok(calls.length > 0, 'the adapter did ask for a timer');
});

test('no timer of the adapter outlives the commands it watched (a command from the offline queue)', async () => {
  const ledger = timerLedger(ADAPTER);
  try {
    const c = withHotKeys(client(), hk, { tracking: false });
    assert.is(c.status, 'connecting');
    const reply = await c.hget('lc:h', 'f').catch((e: Error) => e); // queued until the connection is up
    assert.is(reply, null);
    await c.ping();
    assert.is(ledger.live.size, 0, 'the breaker keeps no timer while nothing is in flight');
  } finally {
    ledger.restore();
  }
});

test('connect then disconnect: every interval the adapter set is cleared by the end event', async () => {
  const ledger = timerLedger(ADAPTER);
  try {
    const c = withHotKeys(new Redis(fixture.server.url, { maxRetriesPerRequest: 1 }), hk);
    const failed = c.ping().catch((e: Error) => e); // watched by the breaker, fails with the disconnect
    c.on('connect', () => c.disconnect());
    await within('end', once(c, 'end'), 5000);
    assert.instance(await failed, Error);
    assert.is(ledger.counts.intervals, ledger.counts.intervalsCleared);
    assert.is(ledger.live.size, 0);
  } finally {
    ledger.restore();
  }
});

test('no read, no connection of our own (keys hot or not); the first read, cold, opens them', async () => {
  await plain.set('lc:first', 'v');
  await promote('lc:first'); // keys are hot here: a client that only writes or subscribes still needs nothing of ours
  await waitFor('earlier tracking connections closed', async () => (await ownConnections()) === 0);
  const c = withHotKeys(client(), hk);
  await c.set('lc:written', '1');
  await c.ping();
  const sub = c.duplicate(); // wrapped the same way: the pub/sub connection of a service
  await sub.subscribe('lc:channel');
  await delay(200); // a connection of ours would be made within a few ms of the client being ready
  assert.is(await ownConnections(), 0, 'a plain client makes one connection: so does this one');
  assert.is(await c.get('lc:cold'), null); // a read of a cold key
  await waitFor('tracking connections up', async () => (await ownConnections()) === 2);
  c.disconnect();
  sub.disconnect();
});

test("a wrapped link to a real Redis Sentinel that only subscribes (ioredis's failover detector) opens nothing of ours, keys hot", async () => {
  // ioredis's sentinel links are Redis clients too; one wrapped (a harness wrapping every client)
  // and ready while keys are hot used to open tracking connections to the sentinel, whose
  // SUBSCRIBE and broadcast +switch-master messages then met connections that did not expect them
  const dir = mkdtempSync(join(tmpdir(), 'hotkey-sentinel-'));
  const port = await freePort();
  writeFileSync(
    join(dir, 'sentinel.conf'),
    `port ${port}\nbind 127.0.0.1\nsentinel monitor m 127.0.0.1 ${fixture.server.port} 1\n`,
  );
  const sentinel = spawn('redis-server', [join(dir, 'sentinel.conf'), '--sentinel', '--dir', dir], { stdio: 'ignore' });
  const admin = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  let link: Redis | undefined;
  try {
    await waitFor('the sentinel answers', () =>
      admin.ping().then(
        () => true,
        () => false,
      ),
    );
    await plain.set('lc:sentinel-hot', 'v');
    await promote('lc:sentinel-hot');
    link = withHotKeys(new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 }), hk);
    await link.subscribe('+switch-master');
    await delay(200); // tracking connections would be made within a few ms of 'ready'
    const list = (await admin.client('LIST')) as string;
    assert.not.ok(/ name=hotkey-/.test(list), `no connection of ours on the sentinel:\n${list}`);
  } finally {
    link?.disconnect();
    admin.disconnect();
    const exited = once(sentinel, 'exit');
    sentinel.kill('SIGKILL');
    await within('the sentinel to exit', exited, 5000);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('hot from the first read: connections up before the promotion; its load is tracked, the next reads local', async () => {
  await waitFor('earlier tracking connections closed', async () => (await ownConnections()) === 0);
  const c = withHotKeys(client(), hk);
  await c.get('lc:hot-cold'); // the client's first read
  await waitFor('a tracking reader with tracking on', async () => (await trackingReaders()).length === 1);
  await plain.set('lc:hot', 'v1');
  await promote('lc:hot');
  const before = await redisCalls();
  assert.is(await c.get('lc:hot'), 'v1'); // the load: over the tracking connection
  assert.is(await c.get('lc:hot'), 'v1');
  assert.is(await c.get('lc:hot'), 'v1');
  const after = await redisCalls();
  assert.is(after.get - before.get, 1, 'Redis answered one GET: the load');
  assert.is(after.caching - before.caching, 1, 'the load opted the key into tracking (CLIENT CACHING yes)');
  await plain.set('lc:hot', 'v2'); // a write behind the wrapper's back: tracking drops the copy
  await waitFor('v2', async () => (await c.get('lc:hot')) === 'v2');
  c.disconnect();
});

test('a hot read while the client connects waits in its offline queue, in call order', async () => {
  await plain.set('lc:early', 'e');
  await plain.set('lc:cold-early', 'c');
  await promote('lc:early');
  const c = withHotKeys(client({ lazyConnect: true }), hk);
  const replied: string[] = [];
  // plain ioredis queues both until the connection is ready and replays them in call order
  const hot = c.get('lc:early').then((v) => replied.push(`hot=${v}`));
  const cold = c.get('lc:cold-early').then((v) => replied.push(`cold=${v}`));
  assert.is(c.status, 'connecting');
  await within('both replies', Promise.all([hot, cold]), 5000);
  assert.equal(replied, ['hot=e', 'cold=c']);
});

test("no command of the adapter's is written after the user's QUIT (a replica copy's DEL of a late-acked write)", async () => {
  const c = withHotKeys(client(), hk, { tracking: false, awaitInvalidation: false });
  const errors: Error[] = [];
  c.on('error', (e: Error) => errors.push(e));
  const seen: string[] = [];
  const original = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (this: Redis, command: any, ...rest: any[]) {
    if (this === c) seen.push(command.name); // everything written on c's connection, the adapter's too
    return (original as any).call(this, command, ...rest);
  } as any;
  try {
    await quitAfterWrite(c, seen);
  } finally {
    Redis.prototype.sendCommand = original;
  }
  assert.equal(errors, []);
});

async function quitAfterWrite(c: Redis, seen: string[]): Promise<void> {
  await plain.set('rep:q', 'v');
  await promote('rep:q');
  assert.is(await c.get('rep:q'), 'v');
  // the write resolves at once (awaitInvalidation false); its copies' DEL waits for the hub's ack
  assert.is(await c.set('rep:q', 'w'), 'OK');
  await c.quit();
  await waitFor('the invalidation acked', () => hk.stats().invalidationsPending === 0);
  await waitFor('the connection closed', () => c.status === 'end');
  const after = seen.slice(seen.indexOf('quit') + 1);
  assert.equal(after, [], 'nothing sent behind QUIT');
}

test("a fold of the adapter's issued right behind QUIT is rejected, not written", async () => {
  const c = withHotKeys(client(), hk, { tracking: false });
  await c.ping();
  const seen: string[] = [];
  const original = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (this: Redis, command: any, ...rest: any[]) {
    if (this === c) seen.push(command.name);
    return (original as any).call(this, command, ...rest);
  } as any;
  try {
    const quit = c.quit();
    const fold = await counter(c, 'lc:{n}', { shards: 2 })
      .fold()
      .then(
        () => undefined,
        (e: { code?: string }) => e,
      );
    await quit;
    assert.is(fold?.code, 'HK_ERR_CLOSED');
    assert.equal(seen, ['quit'], 'no EVAL written behind QUIT');
  } finally {
    Redis.prototype.sendCommand = original;
  }
});

test("tracking connections of a RESP3 client with replyMapping 'resp3' open (plain replies)", async () => {
  await plain.set('lc:resp3', 'r');
  const c = withHotKeys(new Redis(fixture.server.url, { protocol: 3, replyMapping: 'resp3' } as never), hk);
  try {
    await c.ping();
    await promote('lc:resp3');
    assert.is(await c.get('lc:resp3'), 'r'); // the load: through its tracking connections once up
    // cached only when tracked: Redis answers no more reads of it
    await waitFor('served locally', async () => {
      const before = await redisGets();
      assert.is(await c.get('lc:resp3'), 'r');
      return (await redisGets()) === before;
    });
    await plain.set('lc:resp3', 'r2'); // a write behind its back: its tracking drops the copy
    await waitFor('r2', async () => (await c.get('lc:resp3')) === 'r2');
  } finally {
    c.disconnect();
  }
});

test('bad input: not an ioredis client, wrapped by another HotKeyClient', async () => {
  for (const bad of [null, 42, {}, { sendCommand() {} }, { sendCommand() {}, duplicate() {}, options: {} }]) {
    assert.throws(
      () => withHotKeys(bad as never, hk),
      (e: Error) => e instanceof TypeError && /Redis or Cluster of ioredis or iovalkey/.test(e.message),
    );
  }
  // a Cluster whose startup nodes are gone: no deployment to key its values by
  const seedless = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
  (seedless as unknown as { startupNodes: unknown }).startupNodes = null;
  assert.throws(
    () => withHotKeys(seedless, hk),
    (e: Error) => e instanceof TypeError && /without startup nodes/.test(e.message),
  );
  assert.is(Object.getPrototypeOf(seedless), Cluster.prototype, 'nothing hooked on a refused client');
  const c = withHotKeys(client(), hk);
  await assertHookedOnce(withHotKeys, c, hk, new HotKeyClient({ app: 'shop', hubs: [fixture.hub.url] }));
});

test('a wrapped client after hk.close(): a plain client (reads from Redis, writes unhindered)', async () => {
  const own = new HotKeyClient({ app: 'shop', hubs: [fixture.hub.url], flushIntervalMs: 20 });
  await own.ready({ signal: AbortSignal.timeout(5000) });
  const c = withHotKeys(client(), own, { tracking: false });
  await plain.set('lc:closed', 'a');
  await promote('lc:closed', own);
  assert.is(await c.get('lc:closed'), 'a');
  assert.is(await c.get('lc:closed'), 'a');
  await assertPlainAfterClose(c, plain, own, 'lc:closed');
});

test.run();
