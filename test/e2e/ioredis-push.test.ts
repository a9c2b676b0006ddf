/**
 * Value push through the ioredis wrapper, on a real redis-server and a real hub: a shared hot key
 * (`push: true`) read by several instances with wrapped clients is read from Redis once and
 * pushed to the others; an outside write (plain ioredis, no SDK) still reaches every instance
 * (the filler vouches: its tracking hears the write, it invalidates cluster-wide); a filler that
 * leaves takes its pushed values with it (the hub invalidates them). With `writes: 'update'` a
 * SET pushes its value with its invalidation: after the ack every instance serves the new value
 * without reading Redis. Reads are counted by Redis itself (INFO commandstats).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { ErrorCode, type HotKeyClient } from '@hotkey/sdk';
import { MsgType, packValue, PushForm } from '@hotkey/sdk/protocol';
import { hotKeyStats, withHotKeys, type WithHotKeysOptions } from '@hotkey/sdk/ioredis';
import { hubInProcess } from '../support/e2e.ts';
import { RedisServer } from '../support/redis-server.ts';
import { promoteOn, wrappedReaders, type Reader } from '../support/staleness.ts';
import { delay, waitFor } from '../support/wait.ts';

const SHARED = { threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs: 30_000, push: true };
// pushWaitMs 5 s: an instance waits that long for the filler's pushed value before it loads by
// itself — under a loaded CI box a push can take over the 1 s default, and the read counts below
// are about the push, not about that bound. surgeLocal off: the hub's promotion is under test.
const e2e = hubInProcess(
  test,
  { config: { apps: { shop: { rules: [{ match: '*', ...SHARED }] } } } },
  { sdk: { pushWaitMs: 5000, surgeLocal: false } },
);

type Instance = Reader<Redis>;

let server: RedisServer;
const opened: Redis[] = [];
let plain: Redis;

function redis(): Redis {
  const c = new Redis(server.url, { maxRetriesPerRequest: 1 });
  opened.push(c);
  return c;
}

const instances = (n: number, wrap: WithHotKeysOptions = {}): Promise<Instance[]> =>
  wrappedReaders(e2e, n, redis, wrap);
const promote = (key: string, on: readonly Instance[]): Promise<void> => promoteOn(e2e, key, on);

/** `key` is promoted, every instance reads it once (one fills, the others get the push), and all serve `value`. */
async function promoteShared(group: readonly Instance[], key: string, value: string): Promise<void> {
  await promote(key, group);
  await Promise.all(group.map((r) => r.redis.get(key)));
  await allServe(group, key, value);
}

/** GET commands Redis executed so far (tracked loads' GETs inside MULTI count too). */
async function gets(): Promise<number> {
  const info = await plain.info('commandstats');
  return Number(/^cmdstat_get:calls=(\d+)/m.exec(info)?.[1] ?? 0);
}

/** Every instance reads `key` until it serves `value`; ms until the last one did. */
async function allServe(group: readonly Instance[], key: string, value: string, timeoutMs = 5000): Promise<number> {
  const t0 = performance.now();
  await Promise.all(
    group.map((r) =>
      waitFor(`${r.hk.instanceId} serves ${value}`, async () => (await r.redis.get(key)) === value, timeoutMs, 1),
    ),
  );
  return performance.now() - t0;
}

const sum = (group: readonly Instance[], f: (hk: HotKeyClient) => number) => group.reduce((n, r) => n + f(r.hk), 0);

test.before(async () => {
  server = await RedisServer.start();
  plain = redis();
});

// a Fill goes to any instance of the app: only this test's instances may be connected
test.after.each(() => e2e.closeClients());

test.after(async () => {
  for (const c of opened) c.disconnect();
  await delay(20);
  await server?.stop();
});

test('a shared key read through the wrapper: ≤ 2 GETs at promotion for 5 instances; an outside write reaches all', async () => {
  const group = await instances(5);
  const key = 'share:item:1';
  await plain.set(key, 'v1', 'PX', 600_000);
  const before = await gets();
  await promoteShared(group, key, 'v1');
  const atPromotion = (await gets()) - before;
  console.log(
    `# push through the wrapper: ${atPromotion} GET(s) of the key at promotion for ${group.length} instances`,
  );
  assert.ok(atPromotion <= 2, `${atPromotion} GETs at promotion`);
  assert.ok(sum(group, (hk) => hk.stats().push.valuesInjected) >= group.length - 1, 'the others injected it');
  // served locally from now on
  const more = await gets();
  for (let i = 0; i < 20; i++) for (const r of group) assert.is(await r.redis.get(key), 'v1');
  assert.is((await gets()) - more, 0, 'no GET for 100 reads');

  // an outside write: the filler's tracking hears it and invalidates cluster-wide
  await plain.set(key, 'v2');
  const ms = await allServe(group, key, 'v2', 1000);
  console.log(`# outside write after a push: every instance serves the new value within ${ms.toFixed(1)} ms`);
  assert.ok(ms < 1000, `${ms} ms`);
  const vouched = group.reduce((n, r) => n + hotKeyStats(r.redis).push.vouchInvalidations, 0);
  assert.ok(vouched >= 1, 'the filler invalidated the pushed value it vouched for');
});

test('hashes too: one HGETALL at promotion, HGET and HGETALL served from the pushed record; an outside HSET reaches all', async () => {
  const group = await instances(4);
  const key = 'share:user:7';
  await plain.hset(key, { name: 'ann', city: 'oslo' });
  const before = await plain.info('commandstats');
  const calls = (info: string) => Number(/^cmdstat_hgetall:calls=(\d+)/m.exec(info)?.[1] ?? 0);
  await promote(key, group);
  await Promise.all(group.map((r) => r.redis.hgetall(key)));
  await Promise.all(
    group.map((r) =>
      waitFor(`${r.hk.instanceId} serves the hash`, async () => (await r.redis.hget(key, 'name')) === 'ann', 5000, 1),
    ),
  );
  const loads = calls(await plain.info('commandstats')) - calls(before);
  assert.ok(loads <= 2, `${loads} HGETALLs at promotion`);
  assert.ok(sum(group, (hk) => hk.stats().push.valuesInjected) >= group.length - 1);
  for (const r of group) assert.equal(await r.redis.hgetall(key), { name: 'ann', city: 'oslo' });
  await plain.hset(key, 'name', 'bob');
  await Promise.all(
    group.map((r) =>
      waitFor(`${r.hk.instanceId} sees bob`, async () => (await r.redis.hget(key, 'name')) === 'bob', 1000, 1),
    ),
  );
});

test("the filler's tracking session ends (connection killed): it invalidates what it pushed, cluster-wide", async () => {
  const subs = async () =>
    ((await plain.client('LIST')) as string)
      .split('\n')
      .filter((line) => line.includes(' name=hotkey-invalidations '))
      .map((line) => /(?:^|\s)id=(\d+)/.exec(line)![1]!);
  const before = new Set(await subs());
  const group = await instances(4);
  const key = 'share:item:3';
  await plain.set(key, 'k1');
  await promoteShared(group, key, 'k1');
  const filler = group.find((r) => r.hk.stats().push.pushesSent > 0)!;
  const others = group.filter((r) => r !== filler);
  // every instance opened its tracking connections at its first read: all are killed (the others
  // drop only what they loaded themselves; what the filler pushed goes by the filler's invalidation)
  const fresh = await waitFor('every instance subscribed for invalidations', async () => {
    const ids = (await subs()).filter((id) => !before.has(id));
    return ids.length === group.length ? ids : undefined;
  });
  const heard = new Set<string>();
  for (const r of others) r.hk.on('invalidate', (k) => k === key && heard.add(r.hk.instanceId));
  for (const id of fresh) await plain.client('KILL', 'ID', id);
  await waitFor('every other instance dropped the pushed value', () => heard.size === others.length, 3000);
  assert.ok(hotKeyStats(filler.redis).push.vouchInvalidations >= 1);
  await plain.set(key, 'k2');
  const ms = await allServe(group, key, 'k2', 2000);
  assert.ok(ms < 2000, `${ms} ms`);
});

test('the filler leaves: the hub invalidates what it pushed, and the others hear outside writes again', async () => {
  const group = await instances(4);
  const key = 'share:item:2';
  await plain.set(key, 'w1');
  await promoteShared(group, key, 'w1');
  const filler = group.find((r) => r.hk.stats().push.pushesSent > 0);
  assert.ok(filler !== undefined, 'one instance pushed');
  const others = group.filter((r) => r !== filler);
  const heard = new Set<string>();
  for (const r of others) r.hk.on('invalidate', (k) => k === key && heard.add(r.hk.instanceId));
  const orphans = e2e.hub.core.metrics.orphanInvalidations;
  await filler.hk.close();
  await waitFor('every other instance dropped the pushed value', () => heard.size === others.length, 3000);
  assert.ok(e2e.hub.core.metrics.orphanInvalidations > orphans, 'counted at the hub');
  // they loaded it themselves, tracked: an outside write now reaches them through their own tracking
  await allServe(others, key, 'w1');
  await plain.set(key, 'w2');
  const ms = await allServe(others, key, 'w2', 1000);
  assert.ok(ms < 1000, `${ms} ms`);
});

test("writes: 'update' — after the ack every instance serves the new value without a GET of its own", async () => {
  const group = await instances(4, { writes: 'update' });
  const key = 'share:upd:1';
  await plain.set(key, 'u1');
  await promoteShared(group, key, 'u1');
  const writer = group.find((r) => r.hk.stats().push.pushesSent === 0)!; // not the filler: it never read the key
  let total = 0;
  for (let round = 2; round <= 6; round++) {
    const before = await gets();
    assert.is(await writer.redis.set(key, `u${round}`, 'PX', 600_000), 'OK');
    // acked: nobody serves the old value, and nobody read Redis but the writer's read-back
    const served = await Promise.all(group.map((r) => r.redis.get(key)));
    assert.equal(
      served,
      group.map(() => `u${round}`),
      `round ${round}`,
    );
    const read = (await gets()) - before;
    total += read;
    assert.ok(read <= 1, `round ${round}: ${read} GETs`);
  }
  console.log(
    `# update writes: ${total} GET(s) over 5 acknowledged SETs for ${group.length} instances (the writer's read-back)`,
  );
  assert.ok(sum(group, (hk) => hk.stats().push.updatesInjected) >= 5 * (group.length - 1), 'updates injected');
  assert.ok(writer.hk.stats().push.updatesSent >= 5);
  assert.ok(hotKeyStats(writer.redis).push.readBacks >= 5);
  // the writer vouches for what it pushed: an outside write reaches everyone
  await plain.set(key, 'outside');
  const ms = await allServe(group, key, 'outside', 1000);
  assert.ok(ms < 1000, `${ms} ms`);
});

test("writes: 'update' — racing writers end with every instance serving what Redis holds", async () => {
  const group = await instances(4, { writes: 'update' });
  const key = 'share:upd:race';
  await plain.set(key, 'r0');
  await promoteShared(group, key, 'r0');
  let superseded = 0;
  for (let round = 1; round <= 20; round++) {
    const outside = round % 3 === 0;
    await Promise.all([
      group[0]!.redis.set(key, `a${round}`),
      group[1]!.redis.set(key, `b${round}`),
      outside ? plain.set(key, `p${round}`) : Promise.resolve(),
    ]);
    const final = (await plain.get(key))!;
    if (outside) {
      // a write without the SDK is not acked: it reaches the instances through a vouching writer
      await allServe(group, key, final, 1000);
      continue;
    }
    // both writes acknowledged: no instance may serve the older one, not even for a moment (an
    // update marked before the other write went out is broadcast as a plain invalidation)
    const served = await Promise.all(group.map((r) => r.redis.get(key)));
    assert.equal(
      served,
      group.map(() => final),
      `round ${round}: every instance serves what Redis holds`,
    );
    superseded = e2e.hub.core.metrics.updatesSuperseded;
  }
  console.log(`# racing update writers: ${superseded} updates sent plain (another write went out after their mark)`);
});

test('hub: updates of shared keys carry their value; oversized ones go plain (HK_ERR_PUSH_TOO_LARGE); pushers vouch', async () => {
  const { client: a } = await e2e.join('shop');
  const { client: b } = await e2e.join('shop');
  const key = 'share:raw:1';
  assert.ok(e2e.hub.core.promote('shop', key));
  await b.next(MsgType.Promote, 3000, (m) => m.key === key);
  // over the hub's maxPushBytes (64 KiB), under the frame limit: invalidated plain, the writer told, acked
  a.send({ t: MsgType.InvalidateRequest, id: 1, key, value: new Uint8Array(70_000), since: 0 });
  assert.is((await a.next(MsgType.Error)).code, ErrorCode.PushTooLarge);
  const plainOne = await b.next(MsgType.Invalidate, 3000, (m) => m.key === key);
  assert.is(plainOne.value, undefined);
  await a.next(MsgType.Ack, 3000, (m) => m.id === 1);
  // an update: the value and a version ride the invalidation
  const since = plainOne.seq; // marked after the last write of the key went out
  a.send({ t: MsgType.InvalidateRequest, id: 2, key, value: packValue('v'), form: PushForm.Record, since });
  const upd = await b.next(MsgType.Invalidate, 3000, (m) => m.key === key);
  assert.equal(
    [upd.value?.byteLength, upd.form, typeof upd.ver],
    [packValue('v').byteLength, PushForm.Record, 'number'],
  );
  await a.next(MsgType.Ack, 3000, (m) => m.id === 2);
  // only the supplier's `pushed` invalidation goes out; another's is moot, acked at once
  const moot = e2e.hub.core.metrics.pushedInvalidationsMoot;
  b.send({ t: MsgType.InvalidateRequest, id: 3, key, pushed: true });
  await b.next(MsgType.Ack, 3000, (m) => m.id === 3);
  assert.is(e2e.hub.core.metrics.pushedInvalidationsMoot, moot + 1);
  a.send({ t: MsgType.InvalidateRequest, id: 4, key, pushed: true });
  await b.next(MsgType.Invalidate, 3000, (m) => m.key === key);
  await a.next(MsgType.Ack, 3000, (m) => m.id === 4);
  // an update marked before the last write of the key went out: plain, counted
  const superseded = e2e.hub.core.metrics.updatesSuperseded;
  a.send({ t: MsgType.InvalidateRequest, id: 5, key, value: packValue('x'), since: plainOne.seq });
  const plainFive = await b.next(MsgType.Invalidate, 3000, (m) => m.key === key);
  assert.is(plainFive.value, undefined);
  await a.next(MsgType.Ack, 3000, (m) => m.id === 5);
  assert.is(e2e.hub.core.metrics.updatesSuperseded, superseded + 1);
  // the supplier of the current value leaves: the hub invalidates it
  a.send({ t: MsgType.InvalidateRequest, id: 6, key, value: packValue('w'), since: plainFive.seq });
  await b.next(MsgType.Invalidate, 3000, (m) => m.key === key && m.value !== undefined);
  a.close();
  const orphan = await b.next(MsgType.Invalidate, 3000, (m) => m.key === key);
  assert.is(orphan.value, undefined);
});

test("withHotKeys: writes must be 'invalidate' or 'update'", async () => {
  const [hk] = await e2e.sdks(1);
  assert.throws(() => withHotKeys(redis(), hk!, { writes: 'upsert' as never }), TypeError);
});

test.run();
