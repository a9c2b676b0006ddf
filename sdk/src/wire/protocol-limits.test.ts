/** Guards of the replica count (Promote, Snapshot) and the Limit frame: hostile values are protocol errors. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pack } from 'msgpackr';
import { ErrorCode, ProtocolError } from '../errors.ts';
import { CloseCode, decodeClientMessage, decodeServerMessage, encode, MsgType } from './protocol.ts';

function refused(frame: object, decode: (b: Uint8Array) => unknown = decodeServerMessage): void {
  try {
    decode(pack(frame));
  } catch (err) {
    assert.instance(err, ProtocolError);
    assert.is(
      (err as ProtocolError).code === ErrorCode.Protocol || (err as ProtocolError).code === ErrorCode.KeyTooLong,
      true,
    );
    assert.ok((err as ProtocolError).closeCode >= CloseCode.Protocol);
    return;
  }
  assert.unreachable(`accepted ${JSON.stringify(frame)}`);
}

const promote = { t: MsgType.Promote, seq: 1, key: 'k', qps: 10, hotMs: 1000, cacheTtlMs: 0, cache: false, at: 1 };

test('Promote and Snapshot carry an optional replica count in [1, 64]', () => {
  assert.is((decodeServerMessage(encode({ ...promote, replicas: 3 })) as { replicas?: number }).replicas, 3);
  assert.is((decodeServerMessage(encode(promote)) as { replicas?: number }).replicas, undefined);
  for (const replicas of [0, -1, 1.5, 65, 'x', null]) refused({ ...promote, replicas });
  const entry = { key: 'k', ttlMs: 1, cacheTtlMs: 0, cache: false, qps: 1 };
  refused({ t: MsgType.Snapshot, seq: 1, hot: [{ ...entry, replicas: 1e9 }] });
});

test('Limit: keys and rates of one length, rates finite and non-negative, a positive ttl', () => {
  const ok = { t: MsgType.Limit, keys: ['a', 'b'], rates: [1.5, 0], ttlMs: 3000 };
  assert.equal(decodeServerMessage(encode(ok)), ok);
  refused({ ...ok, rates: [1] });
  refused({ ...ok, rates: [1, -1] });
  refused({ ...ok, rates: [1, Number.NaN] });
  refused({ ...ok, rates: [1, '2'] });
  refused({ ...ok, keys: ['a', ''] });
  refused({ ...ok, keys: 'a' });
  refused({ ...ok, ttlMs: 0 });
  refused({ ...ok, ttlMs: undefined });
  // a hub-only frame an SDK must not send
  refused(ok, decodeClientMessage);
});

test.run();
