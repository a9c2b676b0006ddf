import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { at, closeAll, settledNow, setup, type Setup } from '../../../../test/support/sdk-client.ts';
import { delay, waitFor } from '../../../../test/support/wait.ts';
import { MsgType, packValue, unpackValue } from '../../wire/protocol.ts';
import { pushable } from './push.ts';

test.after.each(closeAll);

const PUSH = { push: true };

function value(s: Setup, key: string, ver: number, v: unknown): void {
  s.sock.send({ t: MsgType.Value, key, ver, value: packValue(v) });
}

test('a promoted shared key: readers wait for the pushed value instead of loading', async () => {
  const s = await setup({}, PUSH);
  let calls = 0;
  const loader = () => (calls++, 'own');
  const reads = [s.hk.get('k', loader), s.hk.get('k', loader)];
  assert.not.ok(await settledNow(Promise.all(reads)), 'waiting for the push');
  value(s, 'k', 5, { price: 42 });
  assert.equal(await Promise.all(reads), [{ price: 42 }, { price: 42 }]);
  assert.equal(await s.hk.get('k', loader), { price: 42 });
  assert.is(calls, 0, 'no loader call on this instance');
  const st = s.hk.stats();
  assert.is(st.push.valuesInjected, 1);
  assert.is(st.loads, 0);
});

test('no push within pushWaitMs: the reader loads by itself', async () => {
  const s = await setup({ pushWaitMs: 30 }, PUSH);
  let calls = 0;
  assert.is(await s.hk.get('k', () => (calls++, 'own')), 'own');
  assert.is(calls, 1);
  assert.is(await s.hk.get('k', () => 'x'), 'own', 'cached as usual');
});

test('Fill: the instance asked loads once and pushes under the ticket; a refresh Fill loads with the last loader', async () => {
  const s = await setup({}, PUSH);
  s.sock.send({ t: MsgType.Fill, key: 'k', ver: 7 });
  await new Promise((r) => setImmediate(r));
  let calls = 0;
  assert.is(await s.hk.get('k', () => `v${++calls}`), 'v1', 'the instance asked does not wait for a push');
  const push = await s.sock.next(MsgType.Push);
  assert.is(push.key, 'k');
  assert.is(push.ver, 7);
  assert.is(unpackValue(push.value), 'v1');
  await at(s, 850); // before this instance's own refresh point (a shared key's is 0.88..0.98 × TTL): the Fill loads
  s.sock.send({ t: MsgType.Fill, key: 'k', ver: 9 });
  const refresh = await s.sock.next(MsgType.Push);
  assert.is(refresh.ver, 9);
  assert.is(unpackValue(refresh.value), 'v2');
  assert.is(calls, 2);
  assert.is(s.hk.stats().push.pushesSent, 2);
});

test('versions: a Value not above the last one is ignored and counted; the newer value stays', async () => {
  const s = await setup({}, PUSH);
  value(s, 'k', 5, 'five');
  await waitFor('injected', () => s.hk.stats().push.valuesInjected === 1);
  value(s, 'k', 4, 'four');
  value(s, 'k', 5, 'five again');
  await waitFor('ignored', () => s.hk.stats().push.valuesOutdated === 2);
  assert.is(await s.hk.get('k', () => 'loader'), 'five');
  value(s, 'k', 6, 'six');
  await waitFor('injected', () => s.hk.stats().push.valuesInjected === 2);
  assert.is(await s.hk.get('k', () => 'loader'), 'six');
});

test('an invalidation wins: the value goes, and a Value arriving within PUSH_GUARD_MS of it is ignored', async () => {
  const s = await setup({}, PUSH);
  value(s, 'k', 5, 'old');
  await waitFor('injected', () => s.hk.stats().push.valuesInjected === 1);
  s.sock.send({ t: MsgType.Invalidate, seq: ++s.seq, key: 'k' });
  await s.sock.next(MsgType.Applied);
  value(s, 'k', 6, 'pushed before the write reached us');
  await waitFor('guarded', () => s.hk.stats().push.valuesGuarded === 1);
  assert.is(await s.hk.get('k', () => 'new'), 'new', 'the reader loads');
  await at(s, 1500); // past the guard, the next round's value is taken
  value(s, 'k', 8, 'next round');
  await waitFor('injected', () => s.hk.stats().push.valuesInjected === 2);
  assert.is(await s.hk.get('k', () => 'x'), 'next round');
});

test('bad values: unserialisable and oversized ones are not pushed; undecodable and unvouched Values are ignored; all counted', async () => {
  const s = await setup({ maxPushBytes: 64 }, PUSH, ['k', 'big', 'ok']);
  class Item {
    price = 1;
  }
  s.sock.send({ t: MsgType.Fill, key: 'k', ver: 1 });
  s.sock.send({ t: MsgType.Fill, key: 'big', ver: 2 });
  s.sock.send({ t: MsgType.Fill, key: 'ok', ver: 3 });
  await delay(20);
  assert.instance(await s.hk.get('k', () => new Item()), Item);
  assert.is(((await s.hk.get('big', () => 'x'.repeat(100))) as string).length, 100);
  assert.is(await s.hk.get('ok', () => 'small'), 'small');
  const push = await s.sock.next(MsgType.Push);
  assert.is(push.key, 'ok', 'only the pushable value went out');
  const st = s.hk.stats().push;
  assert.is(st.pushesUnserialisable, 1);
  assert.is(st.pushesOversized, 1);
  s.sock.send({ t: MsgType.Value, key: 'k', ver: 10, value: new Uint8Array([0x92, 0x01]) }); // truncated msgpack
  value(s, 'cold', 11, 'nobody promoted it');
  await waitFor('counted', () => {
    const p = s.hk.stats().push;
    return p.valuesUndecodable === 1 && p.valuesUnvouched === 1;
  });
});

test('pushable: the types that round-trip as themselves', () => {
  for (const v of [null, 1, 'a', true, 10n, new Date(0), new Uint8Array(2), new Set([1]), { a: [1, { b: undefined }] }])
    assert.ok(pushable(v), String(v));
  const bare = Object.create(null) as Record<string, unknown>;
  bare.x = 1;
  assert.ok(pushable(bare));
  for (const v of [() => 1, Symbol('s'), new Map(), new (class A {})(), { nested: [new Map()] }])
    assert.not.ok(pushable(v), String(v));
});

test.run();
