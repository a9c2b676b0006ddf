/**
 * Every write path of ioredis invalidates the keys it wrote, before the caller hears back:
 * argument shapes (arrays, objects, Maps, Buffers), callback style, call(), pipeline() and
 * multi() (at exec), scripts (eval, evalsha, defineCommand; read-only ones do not), duplicate(),
 * and the commands of the consistency issue's list (copy, setbit, bitfield, move …).
 * A protocol peer stands in for the hub and acks every invalidation at once, recording its key.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import type { HotKeyClient } from '../client/client.ts';
import { withHotKeys } from '../ioredis.ts';
import type { RedisServer } from '../../../test/support/redis-server.ts';
import { type AckingPeer, startAckingPeer } from '../redis/acking-peer.test-helper.ts';

let server: RedisServer;
let hk: HotKeyClient;
let plain: Redis;
let r: Redis;
let fx: AckingPeer;
/** keys whose invalidation the peer acked, in order */
let acked: string[] = [];

test.before(async () => {
  fx = await startAckingPeer((key) => acked.push(key));
  ({ server, hk } = fx);
  plain = new Redis(server.url, { maxRetriesPerRequest: 1 });
  r = withHotKeys(new Redis(server.url, { maxRetriesPerRequest: 1 }), hk);
});

test.after(async () => {
  plain?.disconnect();
  r?.disconnect();
  await fx?.close();
});

async function hot(key: string): Promise<void> {
  if (hk.isHot(key)) return;
  await fx.promote(key);
}

/** `write` settles only after every key in `keys` was acked; the hot cached copy is then gone. */
async function writes(what: string, keys: string[], write: () => Promise<unknown>, changesValue = true): Promise<void> {
  for (const key of keys) {
    await hot(key);
    await r.set(key, `before:${key}`); // through the wrapper: drops what an earlier case cached
    assert.is(await r.get(key), `before:${key}`, `${what}: cached`);
  }
  acked = [];
  await write();
  for (const key of keys)
    assert.ok(acked.includes(key), `${what}: ${key} acked before the write settled (acked: ${acked})`);
  if (changesValue)
    for (const key of keys) assert.is.not(await r.get(key), `before:${key}`, `${what}: ${key} not served stale`);
}

test('argument shapes: arrays, objects, Maps, Buffers', async () => {
  await writes('del([k])', ['a1', 'a2'], () => r.del(['a1', 'a2']));
  await writes('unlink([k])', ['a1'], () => r.unlink(['a1']));
  await writes('mset({})', ['a1', 'a2'], () => r.mset({ a1: 'x', a2: 'y' }));
  await writes('mset(Map)', ['a1', 'a2'], () =>
    r.mset(
      new Map([
        ['a1', 'x'],
        ['a2', 'y'],
      ]),
    ),
  );
  await writes('mset([k, v])', ['a1'], () => r.mset(['a1', 'x']));
  await writes('msetnx({})', ['a3'], async () => {
    await plain.del('a3');
    return r.msetnx({ a3: 'x' });
  });
  await writes('set(Buffer)', ['a1'], () => r.set(Buffer.from('a1'), 'z'));
});

test('callback style and call() go through the same path', async () => {
  await writes(
    'set(cb)',
    ['c1'],
    () => new Promise((resolve, reject) => r.set('c1', 'v', (err, v) => (err ? reject(err) : resolve(v)))),
  );
  await writes("call('set')", ['c1'], () => r.call('set', 'c1', 'w'));
  await writes("call('SET') upper case", ['c1'], () => r.call('SET', 'c1', 'w2'));
});

test('pipeline() and multi() invalidate written keys before exec resolves', async () => {
  await writes('pipeline().set', ['p1', 'p2'], () => r.pipeline().set('p1', 'x').get('p1').del('p2').exec());
  await writes('multi().set', ['p1', 'p2'], () => r.multi().set('p1', 'y').del('p2').exec());
  await writes('multi() callback exec', ['p1'], () => new Promise((resolve) => r.multi().set('p1', 'z').exec(resolve)));
});

test('scripts: eval, evalsha, defineCommand write their declared keys; read-only ones do not', async () => {
  const lua = "return redis.call('SET', KEYS[1], ARGV[1])";
  await writes('eval', ['s1'], () => r.eval(lua, 1, 's1', 'v'));
  const sha = (await plain.script('LOAD', lua)) as string;
  await writes('evalsha', ['s1'], () => r.evalsha(sha, 1, 's1', 'w'));
  r.defineCommand('setIt', { numberOfKeys: 1, lua });
  r.defineCommand('getIt', { numberOfKeys: 1, lua: "return redis.call('GET', KEYS[1])", readOnly: true });
  await writes('defineCommand', ['s1'], () => (r as any).setIt('s1', 'u'));
  acked = [];
  await (r as any).getIt('s1');
  await r.eval_ro("return redis.call('GET', KEYS[1])", 1, 's1');
  assert.equal(acked, [], 'read-only scripts invalidate nothing');
});

test('duplicate() and the other commands of the consistency list', async () => {
  const dup = r.duplicate();
  try {
    await writes('duplicate().set', ['d1'], () => dup.set('d1', 'v'));
  } finally {
    dup.disconnect();
  }
  await writes('copy … REPLACE', ['d2'], () => r.copy('d1', 'd2', 'REPLACE'));
  await writes('setbit', ['d1'], () => r.setbit('d1', 3, 1));
  await writes('bitfield', ['d1'], () => r.bitfield('d1', 'SET', 'u8', 0, 200));
  await writes('move', ['d1'], () => r.move('d1', 1));
  await writes('rename', ['d1', 'd2'], () => r.rename('d1', 'd2'));
  await writes('getex PX (TTL only)', ['d1'], () => r.getex('d1', 'PX', 100_000), false);
  assert.ok(r.on('error', () => {}) === r, 'chaining returns the wrapped client');
});

test.run();
