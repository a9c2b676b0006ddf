import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Packr, pack } from 'msgpackr';
import {
  CloseCode,
  decodeClientMessage,
  decodeServerMessage,
  encode,
  MAX_FRAME_BYTES,
  MAX_KEY_LENGTH,
  MAX_VALUE_BYTES,
  MsgType,
  packValue,
  PROTOCOL_VERSION,
  unpackValue,
} from './protocol.ts';
import { ProtocolError } from '../errors.ts';
import { DEFAULT_RULE } from '../rules.ts';

function rejects(
  bytes: Uint8Array,
  code: string,
  closeCode: number,
  decode: (b: Uint8Array) => unknown = decodeClientMessage,
) {
  try {
    decode(bytes);
  } catch (err) {
    assert.instance(err, ProtocolError);
    assert.is((err as ProtocolError).code, code);
    assert.is((err as ProtocolError).closeCode, closeCode);
    return;
  }
  assert.unreachable('frame was accepted');
}

test('hello and report round-trip', () => {
  const hello = {
    t: MsgType.Hello,
    v: PROTOCOL_VERSION,
    app: 'shop',
    token: 's',
    instance: 'i-1',
    sdk: '0.1.0',
  } as const;
  assert.equal(decodeClientMessage(encode(hello)), { ...hello, host: undefined, role: undefined });
  const report = { t: MsgType.Report, keys: ['a', '__proto__', 'constructor'], counts: [1, 2, 3] } as const;
  assert.equal(decodeClientMessage(encode({ ...report, keys: [...report.keys], counts: [...report.counts] })), report);
});

test('every server message round-trips through a fresh decoder', () => {
  const msgs = [
    {
      t: MsgType.Welcome,
      v: PROTOCOL_VERSION,
      hub: 'h1',
      epoch: 3,
      members: [{ id: 'h1', url: 'ws://127.0.0.1:1' }],
      rules: [DEFAULT_RULE],
      local: [10],
      instances: 2,
      seq: 0,
    },
    { t: MsgType.Promote, seq: 1, key: 'k', qps: 1200.5, hotMs: 1000, cacheTtlMs: 500, cache: true, at: 1700000000000 },
    { t: MsgType.Invalidate, seq: 2, key: 'k' },
    { t: MsgType.Invalidate, seq: 2, key: '127.0.0.1:6379/0', flush: true },
    { t: MsgType.Demote, seq: 3, key: 'k' },
    { t: MsgType.Snapshot, seq: 3, hot: [{ key: 'k', ttlMs: 10, cacheTtlMs: 5, cache: false, qps: 1 }] },
    { t: MsgType.Ack, id: 7, seq: 2, fenced: ['i-2'], ms: 12 },
    { t: MsgType.Grant, id: 3, ms: 2000 },
    { t: MsgType.Error, code: 'HK_ERR_AUTH', message: 'bad token' },
  ] as const;
  for (const m of msgs) assert.equal(decodeServerMessage(encode(m as never)), m);
});

test('Report: optional hits and loads arrays, one per key, non-negative integers', () => {
  const report = { t: MsgType.Report, keys: ['a', 'b'], counts: [10, 3], hits: [9, 0], loads: [1, 0] } as const;
  assert.equal(decodeClientMessage(encode({ ...report } as never)), report);
  rejects(pack({ ...report, hits: [1] }), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
  rejects(pack({ ...report, loads: [1, -1] }), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
  rejects(pack({ t: MsgType.Report, keys: ['a'], counts: [1], hits: [1] }), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
});

test('Fill, Push and Value: keys and versions checked, values carried as opaque bin', () => {
  const value = packValue({ price: 42, at: new Date(5), tags: new Set(['a']) });
  assert.equal(decodeServerMessage(encode({ t: MsgType.Fill, key: 'k', ver: 3 })), {
    t: MsgType.Fill,
    key: 'k',
    ver: 3,
  });
  for (const [t, decode] of [
    [MsgType.Push, decodeClientMessage],
    [MsgType.Value, decodeServerMessage],
  ] as const) {
    const m = decode(encode({ t, key: 'k', ver: 4, value } as never)) as {
      key: string;
      ver: number;
      value: Uint8Array;
    };
    assert.is(m.key, 'k');
    assert.is(m.ver, 4);
    assert.equal(unpackValue(m.value), { price: 42, at: new Date(5), tags: new Set(['a']) });
    rejects(pack({ t, key: 'k', ver: -1, value }), 'HK_ERR_PROTOCOL', CloseCode.Protocol, decode);
    rejects(pack({ t, key: 'k', ver: 1, value: 'not bin' }), 'HK_ERR_PROTOCOL', CloseCode.Protocol, decode);
    rejects(pack({ t, key: '', ver: 1, value }), 'HK_ERR_KEY_TOO_LONG', CloseCode.KeyTooLong, decode);
    rejects(
      pack({ t, key: 'k', ver: 1, value: new Uint8Array(MAX_VALUE_BYTES + 1) }),
      'HK_ERR_PROTOCOL',
      CloseCode.Protocol,
      decode,
    );
  }
  rejects(pack({ t: MsgType.Fill, key: 'k', ver: 1 }), 'HK_ERR_PROTOCOL', CloseCode.Protocol); // hub-only type
  rejects(
    pack({ t: MsgType.Push, key: 'k', ver: 1, value }),
    'HK_ERR_PROTOCOL',
    CloseCode.Protocol,
    decodeServerMessage,
  );
});

test('garbage, non-maps and unknown types are protocol errors', () => {
  rejects(new Uint8Array([0xc1, 0xff, 0x00]), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
  rejects(pack([1, 2, 3]), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
  rejects(pack('hello'), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
  rejects(pack({ t: 99 }), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
  rejects(pack({ t: MsgType.Promote, seq: 1, key: 'k' }), 'HK_ERR_PROTOCOL', CloseCode.Protocol); // hub-only type
  rejects(new Uint8Array(0), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
});

test('wrong field types are protocol errors', () => {
  rejects(pack({ t: MsgType.Hello, v: '1', app: 'a', instance: 'i', sdk: 'x' }), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
  rejects(pack({ t: MsgType.Report, keys: ['a'], counts: [-1] }), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
  rejects(pack({ t: MsgType.Report, keys: ['a', 'b'], counts: [1] }), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
  rejects(pack({ t: MsgType.Report, keys: [1], counts: [1] }), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
  rejects(pack({ t: MsgType.Report, keys: 'a', counts: [1] }), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
});

test('oversized frames and keys have their own codes', () => {
  rejects(new Uint8Array(MAX_FRAME_BYTES + 1), 'HK_ERR_FRAME_TOO_LARGE', CloseCode.FrameTooLarge);
  rejects(
    pack({ t: MsgType.Report, keys: ['x'.repeat(MAX_KEY_LENGTH + 1)], counts: [1] }),
    'HK_ERR_KEY_TOO_LONG',
    CloseCode.KeyTooLong,
  );
  rejects(pack({ t: MsgType.InvalidateRequest, id: 1, key: '' }), 'HK_ERR_KEY_TOO_LONG', CloseCode.KeyTooLong);
});

test('a flush flag rides on InvalidateRequest and Invalidate: true, or absent', () => {
  const request = { t: MsgType.InvalidateRequest, id: 4, key: '127.0.0.1:6379/0', flush: true } as const;
  assert.equal(decodeClientMessage(encode(request)), request);
  assert.equal(decodeClientMessage(pack({ t: MsgType.InvalidateRequest, id: 4, key: 'k', flush: false })), {
    t: MsgType.InvalidateRequest,
    id: 4,
    key: 'k',
  });
  rejects(pack({ t: MsgType.InvalidateRequest, id: 4, key: 'k', flush: 1 }), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
  rejects(
    pack({ t: MsgType.Invalidate, seq: 1, key: 'k', flush: 'yes' }),
    'HK_ERR_PROTOCOL',
    CloseCode.Protocol,
    decodeServerMessage,
  );
});

test('bad rules inside a Welcome are refused', () => {
  const welcome = {
    t: MsgType.Welcome,
    v: PROTOCOL_VERSION,
    hub: 'h',
    epoch: 0,
    members: [],
    rules: [{ match: 'a', threshold: -1 }],
    local: [1],
    instances: 1,
    seq: 0,
  };
  rejects(pack(welcome), 'HK_ERR_PROTOCOL', CloseCode.Protocol, decodeServerMessage);
});

test('msgpackr extension types are refused with HK_ERR_PROTOCOL before anything is built', () => {
  const clone = new Packr({ useRecords: false, moreTypes: true, structuredClone: true, useBigIntExtension: true });
  const extras: [string, unknown][] = [
    ['Date', new Date(0)],
    ['Set', new Set(['a'])],
    ['RegExp', /x+/],
    ['Error', new Error('boom')],
    ['Uint8Array', new Uint8Array([1, 2])],
    ['Float64Array', new Float64Array([1])],
    ['BigInt', 2n ** 70n],
  ];
  for (const [name, value] of extras) {
    const bytes = clone.pack({ t: MsgType.Report, keys: ['a'], counts: [1], extra: value });
    try {
      decodeClientMessage(bytes);
      assert.unreachable(`${name} was accepted`);
    } catch (err) {
      assert.instance(err, ProtocolError, name);
      assert.is((err as ProtocolError).code, 'HK_ERR_PROTOCOL', name);
      assert.is((err as ProtocolError).closeCode, CloseCode.Protocol, name);
      assert.match((err as Error).message, /extension/, name);
    }
  }
  // msgpackr's `undefined` (fixext 1, type 0) builds nothing and older SDKs wrote it for an absent token: accepted
  const legacy = pack({
    t: MsgType.Hello,
    v: PROTOCOL_VERSION,
    app: 'shop',
    token: undefined,
    instance: 'i',
    sdk: '0.0.9',
  });
  assert.ok(legacy.includes(0xd4), 'the fixture carries the ext-0 token');
  assert.is((decodeClientMessage(legacy) as { token?: string }).token, undefined);
  // and this codec writes none
  assert.not.ok(
    encode({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', token: undefined, instance: 'i', sdk: 'x' }).includes(
      0xd4,
    ),
  );
  // a record definition (msgpackr's 0x72 extension) too
  rejects(new Packr({ useRecords: true }).pack({ t: MsgType.Resync }), 'HK_ERR_PROTOCOL', CloseCode.Protocol);
  // plain values of every width still pass: 64-bit ints, floats, str 8/16, nested maps
  const plain = {
    t: MsgType.Report,
    keys: ['k'.repeat(300), 'x'.repeat(70_000).slice(0, 1024)],
    counts: [0x7fffffff, 0],
    extra: { a: [1.5, null, true, 'y'.repeat(40)], big: 2 ** 40, neg: -(2 ** 40) },
  };
  assert.equal(decodeClientMessage(pack(plain)), { t: MsgType.Report, keys: plain.keys, counts: plain.counts });
});

test.run();
