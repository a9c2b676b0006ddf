/**
 * The in-place Report reader against the protocol's decoder: whatever frame it accepts, the
 * decoder accepts and reads the same; whatever it does not, falls back to the decoder (which then
 * accepts it or throws the error it always threw).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pack } from 'msgpackr';
import { ProtocolError } from '@hotkey/sdk';
import { decodeClientMessage, encode, MAX_COUNT, MAX_KEY_LENGTH, MsgType, type Report } from '@hotkey/sdk/protocol';
import { hashBytes } from '../aggregate/key-index.ts';
import { readReport } from './report-frame.ts';

/** the frame's records through the reader (keys decoded), or undefined when it falls back */
function viaReader(bytes: Uint8Array): Report | undefined {
  const frame = readReport(bytes);
  if (frame === undefined) return undefined;
  const report: Report = { t: MsgType.Report, keys: [], counts: [] };
  const hits: number[] = [];
  const loads: number[] = [];
  while (frame.index < frame.length) {
    frame.next();
    report.keys.push(frame.key());
    report.counts.push(frame.count);
    hits.push(frame.hits);
    loads.push(frame.loads);
  }
  if (frame.savings) Object.assign(report, { hits, loads });
  return report;
}

type Outcome = { ok: unknown } | { code: string; closeCode: number };
function viaDecoder(bytes: Uint8Array): Outcome {
  try {
    return { ok: decodeClientMessage(bytes) };
  } catch (err) {
    assert.instance(err, ProtocolError);
    return { code: (err as ProtocolError).code, closeCode: (err as ProtocolError).closeCode };
  }
}

/** The invariant: the reader accepts only what the decoder accepts, and reads it the same. */
function agrees(bytes: Uint8Array, what: string): boolean {
  const read = viaReader(bytes);
  if (read === undefined) return false;
  assert.equal(viaDecoder(bytes), { ok: read }, what);
  return true;
}

function hex(s: string): Uint8Array {
  return Uint8Array.from(Buffer.from(s.replace(/\s+/g, ''), 'hex'));
}

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 0x1_0000_0000;
  };
}

test('reads what the SDK encodes: keys of every string header and width, counts of every integer width', () => {
  const keys = [
    'item:1',
    'é',
    '日本語',
    '🔥',
    'x'.repeat(31), // longest fixstr
    'y'.repeat(32), // str 8
    'z'.repeat(256), // str 16
    'é'.repeat(MAX_KEY_LENGTH), // 1024 units in 2048 bytes
    '𝄞'.repeat(MAX_KEY_LENGTH / 2), // 1024 units in surrogate pairs
    '語'.repeat(MAX_KEY_LENGTH), // 3072 bytes, still 1024 units
  ];
  const counts = [0, 1, 127, 128, 255, 256, 65_535, 65_536, MAX_COUNT, 5];
  const plain = { t: MsgType.Report, keys, counts } as Report;
  assert.ok(agrees(encode(plain), 'plain'));
  const saved = { ...plain, hits: counts.map((c) => c >>> 1), loads: counts.map((c) => c % 3) } as Report;
  assert.ok(agrees(encode(saved), 'with savings'));
  // arrays of 16 and more (array 16 headers), and no records at all
  const many = Array.from({ length: 5000 }, (_, i) => `k:${i}`);
  assert.ok(agrees(encode({ t: MsgType.Report, keys: many, counts: many.map((_, i) => i) }), 'array 16'));
  assert.ok(agrees(encode({ t: MsgType.Report, keys: [], counts: [] }), 'empty'));
});

test('other valid encodings the SDK does not write: read alike, or left to the decoder', () => {
  const cases: [string, string][] = [
    ['fields in another order', '83 a6636f756e7473 91 05 a46b657973 91 a161 a174 03'],
    ['str 8 for a short key', '83 a174 03 a46b657973 91 d90161 a6636f756e7473 91 05'],
    ['array 16 for one record', '83 a174 03 a46b657973 dc0001 a161 a6636f756e7473 dc0001 05'],
    ['array 32 for one record', '83 a174 03 a46b657973 dd00000001 a161 a6636f756e7473 dd00000001 05'],
    ['str 32 for a key', '83 a174 03 a46b657973 91 db00000001 61 a6636f756e7473 91 05'],
    ['uint 32 for a small count', '83 a174 03 a46b657973 91 a161 a6636f756e7473 91 ce00000005'],
  ];
  for (const [what, frame] of cases) assert.ok(agrees(hex(frame), what), what);
  // valid for the decoder, not the reader's shape: it falls back, and the decoder accepts them
  const fallbacks: [string, string][] = [
    ['t as uint 8', '83 a174 cc03 a46b657973 91 a161 a6636f756e7473 91 05'],
    ['a float count with an integer value', '83 a174 03 a46b657973 91 a161 a6636f756e7473 91 cb4000000000000000'],
    ['an extra field', '84 a174 03 a46b657973 91 a161 a6636f756e7473 91 05 a178 01'],
    ['a map 16 header', 'de0003 a174 03 a46b657973 91 a161 a6636f756e7473 91 05'],
    [
      'msgpackr undefined for absent savings',
      '85 a174 03 a46b657973 91 a161 a6636f756e7473 91 05 a468697473 d40000 a56c6f616473 d40000',
    ],
  ];
  for (const [what, frame] of fallbacks) {
    assert.is(readReport(hex(frame)), undefined, what);
    assert.ok('ok' in viaDecoder(hex(frame)), `the decoder accepts ${what}`);
  }
});

test('bad frames fall back to the decoder, which refuses them with its own codes', () => {
  const bad: [string, Uint8Array][] = [
    ['empty key', pack({ t: 3, keys: [''], counts: [1] })],
    ['key over the limit', pack({ t: 3, keys: ['k'.repeat(MAX_KEY_LENGTH + 1)], counts: [1] })],
    ['key over the limit in surrogate pairs', pack({ t: 3, keys: ['🔥'.repeat(MAX_KEY_LENGTH / 2 + 1)], counts: [1] })],
    ['count over MAX_COUNT', pack({ t: 3, keys: ['a'], counts: [MAX_COUNT + 1] })],
    ['negative count', pack({ t: 3, keys: ['a'], counts: [-1] })],
    ['fractional count', pack({ t: 3, keys: ['a'], counts: [1.5] })],
    ['string count', pack({ t: 3, keys: ['a'], counts: ['1'] })],
    ['lengths differ', pack({ t: 3, keys: ['a', 'b'], counts: [1] })],
    ['hits without loads', pack({ t: 3, keys: ['a'], counts: [1], hits: [1] })],
    ['hits of another length', pack({ t: 3, keys: ['a'], counts: [1], hits: [1, 2], loads: [1] })],
    ['nil hits', pack({ t: 3, keys: ['a'], counts: [1], hits: null, loads: [0] })],
    ['negative load', pack({ t: 3, keys: ['a'], counts: [1], hits: [0], loads: [-2] })],
    ['a number key', pack({ t: 3, keys: [7], counts: [1] })],
    ['keys not an array', pack({ t: 3, keys: 'a', counts: [1] })],
    ['too many records', pack({ t: 3, keys: Array(65_537).fill('a'), counts: Array(65_537).fill(1) })],
    ['duplicate field', hex('83 a174 03 a46b657973 91 a161 a46b657973 91 a161')],
    ['trailing byte', hex('83 a174 03 a46b657973 91 a161 a6636f756e7473 91 05 00')],
    ['ext token as a key', hex('83 a174 03 a46b657973 91 d50001ff a6636f756e7473 91 05')],
    ['ext token as a count', hex('83 a174 03 a46b657973 91 a161 a6636f756e7473 91 d40005')],
    ['overlong UTF-8', hex('83 a174 03 a46b657973 91 a2c0af a6636f756e7473 91 05')],
    ['UTF-8 surrogate', hex('83 a174 03 a46b657973 91 a3eda080 a6636f756e7473 91 05')],
    ['UTF-8 above U+10FFFF', hex('83 a174 03 a46b657973 91 a4f4908080 a6636f756e7473 91 05')],
    ['lone continuation byte', hex('83 a174 03 a46b657973 91 a280 61 a6636f756e7473 91 05')],
    ['cut UTF-8 sequence', hex('83 a174 03 a46b657973 91 a2 61e2 a6636f756e7473 91 05')],
    ['0xc1', hex('83 a174 03 a46b657973 91 c1 a6636f756e7473 91 05')],
    ['an array 16 of keys longer than the frame', hex('83 a174 03 a46b657973 dcffff a161 a6636f756e7473 91 05')],
    ['keys one byte short of their count', hex('83 a174 03 a46b657973 93 a161 a162 a1')],
  ];
  for (const [what, frame] of bad) assert.is(readReport(frame), undefined, what);
  // the invalid UTF-8 keys are not refused by the decoder (it substitutes): the reader must still not read them
  for (const [what, frame] of bad.slice(0, 16)) assert.not.ok('ok' in viaDecoder(frame), `the decoder refuses ${what}`);
  // every cut of a valid frame
  const whole = encode({
    t: MsgType.Report,
    keys: ['item:1', 'é', 'z'.repeat(40)],
    counts: [1, 300, 70_000],
    hits: [0, 1, 2],
    loads: [1, 0, 0],
  });
  for (let n = 0; n < whole.length; n++) assert.is(readReport(whole.subarray(0, n)), undefined, `first ${n} bytes`);
});

test('fuzz: a frame with random bytes changed is read as the decoder reads it, or left to it', () => {
  const random = lcg(42);
  const base = [
    encode({ t: MsgType.Report, keys: ['item:1', 'ключ', '🔥x', 'z'.repeat(40)], counts: [1, 300, 70_000, 0] }),
    encode({ t: MsgType.Report, keys: ['a', 'bb'], counts: [2, 3], hits: [1, 0], loads: [0, 4] }),
  ];
  let accepted = 0;
  for (let round = 0; round < 20_000; round++) {
    const frame = new Uint8Array(base[round % base.length]!); // a copy (Buffer#slice is a view)
    const flips = 1 + Math.floor(random() * 3);
    for (let k = 0; k < flips; k++) frame[Math.floor(random() * frame.length)] = Math.floor(random() * 256);
    if (agrees(frame, `round ${round}`)) accepted++;
  }
  assert.ok(accepted > 100, `some mutants stay valid (${accepted})`);
});

test('the key hashes computed while checking are the index hash of each key, under the seed given', () => {
  const keys = ['a', 'abcd', 'abcde', 'item:12345', 'ключ', '🔥', 'z'.repeat(37)];
  const utf8 = new TextEncoder();
  for (const seed of [0, 77]) {
    const frame = readReport(encode({ t: MsgType.Report, keys, counts: keys.map(() => 1) }), seed)!;
    keys.forEach((key, i) => {
      const bytes = utf8.encode(key);
      assert.is(frame.hashes[i], hashBytes(bytes, 0, bytes.length, seed), key);
    });
  }
});

test('save and restore walk the same records again', () => {
  const frame = readReport(
    encode({ t: MsgType.Report, keys: ['a', 'b', 'c'], counts: [1, 2, 3], hits: [4, 5, 6], loads: [7, 8, 9] }),
  )!;
  frame.next();
  const mark = frame.save();
  frame.next();
  frame.next();
  frame.restore(mark);
  frame.next();
  assert.equal([frame.index, frame.key(), frame.count, frame.hits, frame.loads], [2, 'b', 2, 5, 8]);
});

test.run();
