/**
 * Value push beyond hk.get values: updates (an invalidation that carries the new value) and
 * adapter records (the ioredis wrapper's, PushForm.Record), against a protocol peer whose every
 * frame the test controls: ordering by version, bad input, the filler's vouching.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeAll, setup, type Setup } from '../../../../test/support/sdk-client.ts';
import { waitFor } from '../../../../test/support/wait.ts';
import {
  decodeClientMessage,
  decodeServerMessage,
  encode,
  MsgType,
  packValue,
  PushForm,
  unpackValue,
} from '../../wire/protocol.ts';
import { ProtocolError } from '../../errors.ts';
import { record, SharedRecords, VOUCHED, type Rec } from './shared-records.ts';
import { UNTRACKED } from '../tracking/tracking.ts';

test.after.each(closeAll);

const isProtocolError = (err: unknown) => err instanceof ProtocolError;

const PUSH = { push: true };

function value(s: Setup, key: string, ver: number, v: unknown, form?: PushForm): void {
  s.sock.send({ t: MsgType.Value, key, ver, value: packValue(v), ...(form === undefined ? {} : { form }) });
}

/** An Invalidate carrying `v` (an update) under `ver`; resolves once the client applied it. */
async function update(s: Setup, key: string, ver: number, v: unknown, form?: PushForm): Promise<void> {
  const seq = ++s.seq;
  s.sock.send({ t: MsgType.Invalidate, seq, key, value: packValue(v), ver, ...(form === undefined ? {} : { form }) });
  await waitFor('applied', () => s.sock.received.some((m) => m.t === MsgType.Applied && m.seq === seq));
}

async function invalidate(s: Setup, key: string): Promise<void> {
  const seq = ++s.seq;
  s.sock.send({ t: MsgType.Invalidate, seq, key });
  await waitFor('applied', () => s.sock.received.some((m) => m.t === MsgType.Applied && m.seq === seq));
}

test('an update: the old value goes and the new one is served in the same step, without a loader call', async () => {
  const s = await setup({}, PUSH);
  value(s, 'k', 5, 'old');
  await waitFor('injected', () => s.hk.stats().push.valuesInjected === 1);
  await update(s, 'k', 7, 'new');
  let calls = 0;
  assert.is(await s.hk.get('k', () => (calls++, 'loaded')), 'new');
  assert.is(calls, 0);
  assert.is(s.hk.stats().push.updatesInjected, 1);
});

test('ordering: an older Value or update never overwrites a newer value; an invalidation wins over older values', async () => {
  const s = await setup({}, PUSH);
  await update(s, 'k', 7, 'seven');
  value(s, 'k', 6, 'six: pushed before the update');
  await waitFor('ignored', () => s.hk.stats().push.valuesOutdated === 1);
  assert.is(await s.hk.get('k', () => 'loaded'), 'seven');
  // an older update: it still drops (it is an invalidation) but its value is not taken
  await update(s, 'k', 6, 'six again');
  assert.is(s.hk.stats().push.valuesOutdated, 2);
  assert.is(await s.hk.get('k', () => 'loaded'), 'loaded');
  // a plain invalidation, then a Value the hub sent before it reached the hub: guarded
  await invalidate(s, 'k');
  value(s, 'k', 8, 'eight');
  await waitFor('guarded', () => s.hk.stats().push.valuesGuarded === 1);
  assert.is(await s.hk.get('k', () => 'reloaded'), 'reloaded');
  // an update the hub ordered after that invalidation is taken: its writer read it after its write
  await update(s, 'k', 9, 'nine');
  assert.is(await s.hk.get('k', () => 'loaded'), 'nine');
});

test('an update for a key not hot here, or hot under another rule: only the drop', async () => {
  const s = await setup({}, {}); // not shared
  assert.is(await s.hk.get('k', () => 'own'), 'own');
  await update(s, 'k', 3, 'pushed');
  assert.is(s.hk.stats().push.valuesUnvouched, 1);
  assert.is(await s.hk.get('k', () => 'reloaded'), 'reloaded', 'dropped, reloaded');
});

test('the writer: invalidate(key, { value }) sends the value; not shared, not pushable or oversized: a plain request', async () => {
  const s = await setup({ maxPushBytes: 64 }, PUSH);
  void s.hk.invalidate('k', { value: { price: 7 } }).catch(() => {});
  const sent = await s.sock.next(MsgType.InvalidateRequest);
  assert.equal(unpackValue(sent.value!), { price: 7 });
  assert.is(sent.form, undefined);
  void s.hk.invalidate('k', { value: 'x'.repeat(100) }).catch(() => {});
  assert.is((await s.sock.next(MsgType.InvalidateRequest)).value, undefined, 'oversized');
  void s.hk.invalidate('k', { value: new Map() }).catch(() => {});
  assert.is((await s.sock.next(MsgType.InvalidateRequest)).value, undefined, 'not pushable');
  void s.hk.invalidate('cold', { value: 1 }).catch(() => {});
  assert.is((await s.sock.next(MsgType.InvalidateRequest)).value, undefined, 'not hot');
  const p = s.hk.stats().push;
  assert.is(p.updatesSent, 1);
  assert.is(p.updatesPlain, 3);
  assert.is(p.pushesOversized, 1);
  assert.is(p.pushesUnserialisable, 1);
  assert.throws(() => s.hk.invalidate('k', 'value' as never), TypeError);
});

test('records: injected only with a codec, of a known kind and shape, of a namespace used here', async () => {
  const s = await setup({}, PUSH, ['a', 'b', 'c', 'd', 'e']);
  value(s, 'a', 5, ['string', 'v', 'ns-1', -1], PushForm.Record);
  await waitFor('no codec yet', () => s.hk.stats().push.valuesUndecodable === 1);
  const shared = SharedRecords.of(s.hk);
  shared.noteNamespace('ns-1');
  value(s, 'b', 6, ['string', 'v', 'ns-1', 5000], PushForm.Record);
  await waitFor('injected', () => s.hk.stats().push.valuesInjected === 1);
  const rec = (await s.hk.get<unknown>('b', () => 'loaded')) as Rec;
  assert.is(rec.value, 'v');
  assert.is(rec.session, VOUCHED);
  assert.ok(rec.expiresAt !== undefined && rec.expiresAt <= performance.now() + 5000);
  value(s, 'c', 7, ['list', 'v', 'ns-1', -1], PushForm.Record); // unknown kind
  value(s, 'c', 8, ['hash', { f: 1 }, 'ns-1', -1], PushForm.Record); // a hash field not a string
  value(s, 'c', 9, { kind: 'string' }, PushForm.Record); // not the wire shape
  value(s, 'c', 10, ['string', 'v', 'ns-1', 1.5], PushForm.Record); // TTL not an integer
  await waitFor('malformed', () => s.hk.stats().push.valuesUndecodable === 5);
  value(s, 'd', 11, ['string', 'v', 'ns-2', -1], PushForm.Record);
  await waitFor('foreign', () => s.hk.stats().push.valuesForeign === 1);
  assert.is(await s.hk.get('d', () => 'loaded'), 'loaded');
  // a newer version that cannot be taken supersedes what is held: its pusher no longer vouches for it
  value(s, 'b', 12, ['string', 'v', 'ns-9', -1], PushForm.Record);
  await waitFor('foreign', () => s.hk.stats().push.valuesForeign === 2);
  assert.is(await s.hk.get('b', () => 'reloaded'), 'reloaded');
});

test('the filler pushes only records it can vouch for, and invalidates what it pushed when it hears a write', async () => {
  const s = await setup({}, PUSH, ['k', 'u']);
  const shared = SharedRecords.of(s.hk);
  const session = { live: true };
  const live = (value: string): Rec => record({ kind: 'string', value, ns: 'ns-1', expiresAt: undefined, session });
  s.sock.send({ t: MsgType.Fill, key: 'u', ver: 3 });
  await waitFor('asked', () => s.hk.stats().push !== undefined);
  await new Promise((r) => setImmediate(r));
  await s.hk.get('u', () =>
    record({ kind: 'string', value: 'x', ns: 'ns-1', expiresAt: undefined, session: UNTRACKED }),
  );
  assert.is(s.hk.stats().push.pushesUnvouched, 1, 'read without tracking: not pushed');
  s.sock.send({ t: MsgType.Fill, key: 'k', ver: 4 });
  await new Promise((r) => setImmediate(r));
  await s.hk.get('k', () => live('v1'));
  const push = await s.sock.next(MsgType.Push);
  assert.is(push.form, PushForm.Record);
  assert.equal(unpackValue(push.value), ['string', 'v1', 'ns-1', -1]);
  assert.is(shared.stats.vouched, 1);
  shared.heard('other'); // a key it did not push: nothing
  shared.heard('k');
  const req = await s.sock.next(MsgType.InvalidateRequest);
  assert.is(req.key, 'k');
  assert.is(req.pushed, true);
  assert.is(shared.stats.vouchInvalidations, 1);
  assert.is(shared.stats.vouched, 0);
  // a session that ends: everything pushed under it
  s.sock.send({ t: MsgType.Fill, key: 'k', ver: 20 });
  await new Promise((r) => setImmediate(r));
  await s.hk.get('k', () => live('v2'));
  await s.sock.next(MsgType.Push);
  shared.ended(session);
  assert.is((await s.sock.next(MsgType.InvalidateRequest)).pushed, true);
});

test('protocol: update and record fields are checked', () => {
  const bad = (m: object) => assert.throws(() => decodeServerMessage(encode(m as never)), isProtocolError);
  const value = packValue('v');
  bad({ t: MsgType.Invalidate, seq: 1, key: 'k', value, ver: 1, flush: true });
  bad({ t: MsgType.Invalidate, seq: 1, key: 'k', value }); // no ver
  bad({ t: MsgType.Invalidate, seq: 1, key: 'k', ver: 1 }); // ver without value
  bad({ t: MsgType.Value, key: 'k', ver: 1, value, form: 2 });
  const ok = decodeServerMessage(encode({ t: MsgType.Invalidate, seq: 1, key: 'k', value, ver: 4, form: 1 }));
  assert.equal(ok, { t: MsgType.Invalidate, seq: 1, key: 'k', value, ver: 4, form: 1 });
  const req = decodeClientMessage(
    encode({ t: MsgType.InvalidateRequest, id: 1, key: 'k', value, since: 7, pushed: true }),
  );
  assert.equal(req, { t: MsgType.InvalidateRequest, id: 1, key: 'k', value, since: 7, pushed: true });
  // an update names the broadcast seq its value was read under; without a value, no seq
  assert.throws(
    () => decodeClientMessage(encode({ t: MsgType.InvalidateRequest, id: 1, key: 'k', value })),
    isProtocolError,
  );
  assert.throws(
    () => decodeClientMessage(encode({ t: MsgType.InvalidateRequest, id: 1, key: 'k', since: 3 } as never)),
    isProtocolError,
  );
  assert.throws(
    () => decodeClientMessage(encode({ t: MsgType.InvalidateRequest, id: 1, key: 'k', flush: true, value })),
    isProtocolError,
  );
  assert.throws(
    () => decodeClientMessage(encode({ t: MsgType.InvalidateRequest, id: 1, key: 'k', pushed: 'yes' } as never)),
    isProtocolError,
  );
});

test.run();
