/**
 * The node-redis `withHotKeys` on a real redis-server, with a protocol peer standing in for the
 * hub (it promotes keys and acks invalidations): what it refuses and why, what a hooked client
 * keeps of a plain one, reads under a type mapping, and a wrapped client once hk is closed.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from 'redis';
import { Redis } from 'ioredis';
import { HotKeyClient } from '../client/client.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import { withHotKeys } from '../node-redis.ts';
import type { ProtocolPeer } from '../../../test/support/protocol-peer.ts';
import { destroyAll } from '../../../test/support/node-redis.ts';
import { waitFor } from '../../../test/support/wait.ts';
import { assertHookedOnce, assertPlainAfterClose } from '../../../test/support/wrapper-checks.ts';
import type { RedisServer } from '../../../test/support/redis-server.ts';
import { type AckingPeer, startAckingPeer } from '../redis/acking-peer.test-helper.ts';

let server: RedisServer;
let peer: ProtocolPeer;
let hk: HotKeyClient;
let fx: AckingPeer;
const opened: Array<{ destroy(): void }> = [];
/** node-redis's client under its proxies (a private field in its types) */
const selfOf = (c: object): object => (c as unknown as { _self: object })._self;
const newClient = (options: Parameters<typeof createClient>[0] = {}) => createClient({ url: server.url, ...options });

async function client(options: Parameters<typeof createClient>[0] = {}): Promise<ReturnType<typeof newClient>> {
  const c = newClient(options);
  c.on('error', () => {});
  opened.push(c);
  await c.connect();
  return c;
}

test.before(async () => {
  fx = await startAckingPeer();
  ({ server, peer, hk } = fx);
});

test.after(async () => {
  destroyAll(opened);
  await fx?.close();
});

test('bad input: not a node-redis client, a client with clientSideCache, one wrapped by another hk, bad options', async () => {
  const ioredis = new Redis(server.url, { lazyConnect: true });
  for (const bad of [null, 42, {}, { sendCommand() {} }, ioredis]) {
    assert.throws(
      () => withHotKeys(bad as never, hk),
      (e: Error) => e instanceof TypeError && /node-redis client, cluster or pool/.test(e.message),
    );
  }
  ioredis.disconnect();
  const cached = newClient({ RESP: 3, clientSideCache: { ttl: 0, maxEntries: 100 } });
  const protoBefore = Object.getPrototypeOf(selfOf(cached));
  assert.throws(
    () => withHotKeys(cached, hk),
    (e: Error) => e instanceof TypeError && /clientSideCache/.test(e.message),
  );
  assert.is(Object.getPrototypeOf(selfOf(cached)), protoBefore, 'nothing hooked on a refused client');
  const fresh = newClient();
  const unhooked = Object.getPrototypeOf(selfOf(fresh));
  const refused: Array<[object, RegExp]> = [
    [{ breaker: { failures: 0 } }, /breaker\.failures must be/],
    [{ breaker: 'on' }, /breaker/],
    [{ writes: 'sometimes' }, /writes/],
    [{ replicas: 'yes' }, /replicas must be/],
    [{ replicas: { ttl: 500 } }, /replicas\.ttl is not an option/],
    [{ replicas: { ttlMs: 50 } }, /replicas\.ttlMs must be/],
  ];
  for (const [options, named] of refused) {
    assert.throws(
      () => withHotKeys(fresh, hk, options as never),
      (e: Error) => e instanceof TypeError && named.test(e.message),
      JSON.stringify(options),
    );
    assert.is(Object.getPrototypeOf(selfOf(fresh)), unhooked, 'nothing hooked on refused options');
  }
  const c = withHotKeys(fresh, hk, { breaker: false, replicas: false });
  await assertHookedOnce(withHotKeys, c, hk, new HotKeyClient({ app: 'shop', hubs: peer.url }));
});

test('a hooked client keeps what a plain one has: its class, own keys, events, proxies', async () => {
  const plain = newClient();
  const wrapped = withHotKeys(newClient(), hk);
  assert.is(wrapped.constructor, plain.constructor);
  assert.equal(Object.keys(wrapped).sort(), Object.keys(plain).sort());
  assert.equal(Object.keys(selfOf(wrapped)).sort(), Object.keys(selfOf(plain)).sort());
  assert.ok(wrapped.on('error', () => {}) === wrapped, 'on() chains');
  opened.push(wrapped, plain);
  await wrapped.connect();
  await wrapped.set('w:plain', 'x');
  assert.is(await wrapped.withTypeMapping({}).get('w:plain'), 'x', 'a withTypeMapping proxy reads through the hook');
});

test('a hot GET under a type mapping of bulk strings to Buffers is answered from the cache, as a Buffer', async () => {
  const c = withHotKeys(await client(), hk, { tracking: false });
  await c.set('w:mapped', 'bytes');
  await fx.promote('w:mapped');
  await waitFor('cached', async () => {
    await c.get('w:mapped');
    return hk.stats().hits > 0;
  });
  const hits = hk.stats().hits;
  const mapped = await c.withTypeMapping({ 36: Buffer }).get('w:mapped');
  assert.ok(Buffer.isBuffer(mapped), 'a Buffer, as node-redis maps it');
  assert.is(String(mapped), 'bytes');
  assert.is(hk.stats().hits, hits + 1, 'from the cache');
  assert.is(await c.get('w:mapped'), 'bytes', 'the plain read still gets a string');
  assert.is(hk.stats().hits, hits + 2);
});

test('a write whose invalidation no hub acknowledges rejects HK_ERR_UNACKED (held until its deadline), never unhandled', async () => {
  const lonely = new HotKeyClient({ app: 'shop', hubs: 'ws://127.0.0.1:1', invalidateTimeoutMs: 300 });
  lonely.on('error', () => {});
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  const c = withHotKeys(await client(), lonely);
  const err = (await c.set('nw', '1').catch((e: unknown) => e)) as HotKeyError;
  assert.instance(err, HotKeyError);
  assert.is(err.code, ErrorCode.Unacked);
  assert.is((err.cause as HotKeyError).code, ErrorCode.Timeout);
  assert.is(await c.get('nw'), '1', 'the write itself was applied');
  await lonely.close();
  assert.is(await c.set('nw', '2'), 'OK', 'a closed hk: a plain client');
  await new Promise((resolve) => setImmediate(resolve));
  process.off('unhandledRejection', onUnhandled);
  assert.equal(unhandled, []);
});

test('a wrapped client after hk.close(): a plain client (reads from Redis, writes unhindered)', async () => {
  const peerSock = peer.nextSocket();
  const own = new HotKeyClient({ app: 'shop', hubs: peer.url, flushIntervalMs: 10 });
  const s = await peerSock;
  await own.ready({ signal: AbortSignal.timeout(3000) });
  const c = withHotKeys(await client(), own, { tracking: false });
  const raw = await client();
  await raw.set('w:closed', 'a');
  await fx.promote('w:closed', own, s);
  assert.is(await c.get('w:closed'), 'a');
  await waitFor('served locally', async () => {
    await c.get('w:closed');
    return own.stats().hits > 0;
  });
  await assertPlainAfterClose(c, raw, own, 'w:closed');
});

test.run();
