import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { at, closeAll, deferred, settledNow, setup } from '../../../../test/support/sdk-client.ts';
import { waitFor } from '../../../../test/support/wait.ts';
import { ErrorCode, HotKeyError } from '../../errors.ts';
import { MsgType } from '../../wire/protocol.ts';
import type { ClientStatus } from '../client.ts';

test.after.each(closeAll);

test('refresh-ahead: one background reload past the refresh point; readers keep the current value meanwhile', async () => {
  const s = await setup();
  let calls = 0;
  let gate = deferred<string>();
  const loader = () => (calls++, gate.promise);
  const first = s.hk.get('k', loader);
  gate.resolve('v1');
  assert.is(await first, 'v1');
  await at(s, 700);
  assert.is(await s.hk.get('k', loader), 'v1', 'before the refresh point: a hit');
  assert.is(calls, 1);
  gate = deferred<string>();
  await at(s, 800);
  const during = [s.hk.get('k', loader), s.hk.get('k', loader), s.hk.get('k', loader)];
  assert.ok(await settledNow(Promise.all(during)), 'no reader waits on the reload');
  assert.equal(await Promise.all(during), ['v1', 'v1', 'v1']);
  assert.is(calls, 2, 'one reload for all readers');
  gate.resolve('v2');
  await waitFor('the reload filled', () => s.hk.stats().loadsInFlight === 0);
  assert.is(await s.hk.get('k', loader), 'v2');
  // the new value's lifetime counts from when its reload began (800): fresh until 1800, refresh from ~1520
  await at(s, 1700);
  gate = deferred<string>();
  const next = s.hk.get('k', loader);
  assert.ok(await settledNow(next));
  assert.is(await next, 'v2');
  assert.is(calls, 3);
  gate.resolve('v3');
  const st = s.hk.stats();
  assert.is(st.refreshes, 2);
  assert.is(st.loads, 3);
});

test('refresh-ahead: the ratio is per rule; 1 turns it off', async () => {
  const s = await setup({}, { refreshAheadRatio: 1, staleIfErrorMs: 0 });
  let calls = 0;
  const loader = () => `v${++calls}`;
  assert.is(await s.hk.get('k', loader), 'v1');
  await at(s, 999);
  assert.is(await s.hk.get('k', loader), 'v1');
  assert.is(calls, 1, 'no refresh before expiry');
  await at(s, 1000);
  assert.is(await s.hk.get('k', loader), 'v2', 'expired: the reader loads');
  assert.is(s.hk.stats().refreshes, 0);
});

test('refresh-ahead obeys invalidations: a reload that began before one is not cached', async () => {
  const s = await setup();
  assert.is(await s.hk.get('k', () => 'v1'), 'v1');
  await at(s, 800);
  const gate = deferred<string>();
  assert.is(await s.hk.get('k', () => gate.promise), 'v1', 'the reload runs in the background');
  s.sock.send({ t: MsgType.Invalidate, seq: ++s.seq, key: 'k' });
  await s.sock.next(MsgType.Applied);
  gate.resolve('read-before-the-write');
  await waitFor('the reload settled', () => s.hk.stats().loadsInFlight === 0);
  assert.is(await s.hk.get('k', () => 'after'), 'after', 'the invalidated reload was discarded');
  assert.is(await s.hk.get('k', () => 'loader'), 'after');
});

test('a failed refresh keeps the fresh value; the next try waits RELOAD_RETRY_MS', async () => {
  const s = await setup({}, { refreshAheadRatio: 0.5 }); // refresh from 450..500, fresh until 1000
  assert.is(await s.hk.get('k', () => 'v1'), 'v1');
  await at(s, 500);
  let calls = 0;
  const failing = () => (calls++, Promise.reject(new Error('db down')));
  assert.is(await s.hk.get('k', failing), 'v1');
  await waitFor('the refresh failed', () => s.hk.stats().loadErrors === 1);
  for (let i = 0; i < 5; i++) assert.is(await s.hk.get('k', failing), 'v1');
  assert.is(calls, 1, 'no retry storm');
  await at(s, 760);
  assert.is(await s.hk.get('k', () => (calls++, 'v2')), 'v1', 'the retry runs in the background');
  assert.is(calls, 2);
  await waitFor('the retry filled', () => s.hk.stats().loadsInFlight === 0);
  assert.is(await s.hk.get('k', () => 'x'), 'v2');
});

test('stale-if-error: past cacheTtlMs a failed reload serves the last value, then the error reaches the caller', async () => {
  const s = await setup({}, { refreshAheadRatio: 1, staleIfErrorMs: 3000 });
  assert.is(await s.hk.get('k', () => 'v1'), 'v1');
  await at(s, 1500);
  let calls = 0;
  const rejecting = () => (calls++, Promise.reject(new Error('db down')));
  assert.is(await s.hk.get('k', rejecting), 'v1', 'rejected: the last value');
  assert.is(await s.hk.get('k', rejecting), 'v1');
  assert.is(calls, 1, 'readers do not retry before RELOAD_RETRY_MS');
  await waitFor('status stale-value', () => s.statuses.some((x) => x.type === 'stale-value'));
  const status = s.statuses.find((x) => x.type === 'stale-value') as Extract<ClientStatus, { type: 'stale-value' }>;
  assert.is(status.key, 'k');
  assert.is(status.error.message, 'db down');
  await at(s, 1800);
  const throwing = () => {
    calls++;
    throw new Error('sync boom');
  };
  assert.is(await s.hk.get('k', throwing), 'v1', 'a synchronous throw too (the retry runs in the background)');
  assert.is(calls, 2);
  await at(s, 3999);
  assert.is(await s.hk.get('k', rejecting), 'v1', 'within staleIfErrorMs');
  await at(s, 4000);
  const err = await s.hk.get('k', rejecting).catch((e: Error) => e);
  assert.instance(err, Error);
  assert.is((err as Error).message, 'db down', 'past staleIfErrorMs the error reaches the caller');
  const st = s.hk.stats();
  assert.is(st.staleServed, 4);
  assert.is(s.statuses.filter((x) => x.type === 'stale-value').length, 1, 'one status per episode');
  assert.is(await s.hk.get('k', () => 'v2'), 'v2', 'a good load ends the episode');
});

test('stale-if-error never serves a value an invalidation dropped, nor one whose lease lapsed', async () => {
  const s = await setup({}, { refreshAheadRatio: 1 });
  assert.is(await s.hk.get('k', () => 'v1'), 'v1');
  s.sock.send({ t: MsgType.Invalidate, seq: ++s.seq, key: 'k' });
  await s.sock.next(MsgType.Applied);
  await at(s, 1500);
  const err = await s.hk.get('k', () => Promise.reject(new Error('db down'))).catch((e: Error) => e);
  assert.is((err as Error).message, 'db down');
  assert.is(s.hk.stats().staleServed, 0);
});

test('stale-if-error on a reload that hangs: after loadTimeoutMs its callers get the last value; the load still fills', async () => {
  const s = await setup({ loadTimeoutMs: 30 }, { refreshAheadRatio: 1 });
  assert.is(await s.hk.get('k', () => 'v1'), 'v1');
  await at(s, 1500);
  const gate = deferred<string>();
  assert.is(await s.hk.get('k', () => gate.promise), 'v1');
  assert.is(s.hk.stats().loadTimeouts, 1);
  gate.resolve('v2');
  await waitFor('the slow load filled', () => s.hk.stats().loadsInFlight === 0);
  assert.is(await s.hk.get('k', () => 'x'), 'v2');
});

test('a refresh still running at expiry: readers get the last value at once (stale-while-revalidate), then the new one', async () => {
  const s = await setup({ loadTimeoutMs: 60_000 }); // refresh from ~720..800, fresh until 1000
  assert.is(await s.hk.get('k', () => 'v1'), 'v1');
  await at(s, 800);
  const gate = deferred<string>();
  let calls = 0;
  const slow = () => (calls++, gate.promise);
  assert.is(await s.hk.get('k', slow), 'v1', 'the refresh starts in the background');
  await at(s, 1200);
  const after = [s.hk.get('k', slow), s.hk.get('k', slow)];
  assert.ok(await settledNow(Promise.all(after)), 'past expiry nobody waits on the hung refresh');
  assert.equal(await Promise.all(after), ['v1', 'v1']);
  assert.is(calls, 1, 'no second load');
  assert.ok(s.hk.stats().staleServed >= 2);
  gate.resolve('v2');
  await waitFor('the refresh filled', () => s.hk.stats().loadsInFlight === 0);
  assert.is(await s.hk.get('k', slow), 'v2');
  await at(s, 5000); // v2's load began at 800: fresh until 1800, kept for stale-if-error until 4800
  const gate2 = deferred<string>();
  const late = s.hk.get('k', () => gate2.promise);
  assert.not.ok(await settledNow(late), 'a value past cacheTtlMs + staleIfErrorMs is never served');
  gate2.resolve('v3');
  assert.is(await late, 'v3');
});

test('a loader resolving to undefined: returned, never cached, counted', async () => {
  const s = await setup();
  let calls = 0;
  assert.is(await s.hk.get('k', () => (calls++, undefined)), undefined);
  assert.is(await s.hk.get('k', () => (calls++, undefined)), undefined);
  assert.is(calls, 2);
  assert.is(s.hk.stats().undefinedLoads, 2);
  assert.is(s.hk.stats().cacheSize, 0);
});

test('load limiter: maxLoadsInFlight run, maxLoadsQueued wait, the rest fail with HK_ERR_LOAD_LIMIT', async () => {
  const keys = ['a', 'b', 'c', 'd'];
  const s = await setup({ maxLoadsInFlight: 2, maxLoadsQueued: 1 }, {}, keys);
  const gates = new Map(keys.map((k) => [k, deferred<string>()]));
  const started: string[] = [];
  const loader = (key: string) => (started.push(key), gates.get(key)!.promise);
  const reads = keys.map((k) => s.hk.get(k, loader));
  const rejected = await reads[3]!.catch((e: HotKeyError) => e);
  assert.instance(rejected, HotKeyError);
  assert.is((rejected as HotKeyError).code, ErrorCode.LoadLimit);
  assert.equal(started, ['a', 'b'], 'two in flight');
  let st = s.hk.stats();
  assert.is(st.loadsInFlight, 2);
  assert.is(st.loadsQueued, 1);
  assert.is(st.loadsRejected, 1);
  gates.get('a')!.resolve('A');
  assert.is(await reads[0], 'A');
  await waitFor('c started in the freed slot', () => started.length === 3);
  assert.is(started[2], 'c');
  gates.get('b')!.resolve('B');
  gates.get('c')!.resolve('C');
  assert.equal(await Promise.all(reads.slice(0, 3)), ['A', 'B', 'C']);
  st = s.hk.stats();
  assert.is(st.loadsInFlight, 0);
  assert.is(st.loadsQueued, 0);
  // cold keys are not limited: a get() of a key nobody promoted calls its loader as usual
  assert.is(await s.hk.get('cold', () => 'cold'), 'cold');
});

test('load limiter: a refresh is put off while the limiter is full, and the value keeps serving', async () => {
  const s = await setup({ maxLoadsInFlight: 1 }, { refreshAheadRatio: 0.5 }, ['k', 'busy']);
  assert.is(await s.hk.get('k', () => 'v1'), 'v1');
  const busy = deferred<string>();
  const hold = s.hk.get('busy', () => busy.promise);
  await at(s, 500);
  let calls = 0;
  assert.is(await s.hk.get('k', () => (calls++, 'v2')), 'v1');
  assert.is(calls, 0);
  assert.is(s.hk.stats().refreshesSkipped, 1);
  busy.resolve('b');
  await hold;
  await at(s, 760);
  assert.is(await s.hk.get('k', () => (calls++, 'v2')), 'v1');
  assert.is(calls, 1, 'tried again once a slot was free');
});

test.run();
