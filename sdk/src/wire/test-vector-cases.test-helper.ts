/**
 * The cases of the protocol's test vectors (test-vectors.test-helper.ts turns them into
 * test-vectors.json): frames each direction may carry, at and past the limits, and packed values.
 * A case with an `input` is encoded by the codec; one with `hex` is crafted bytes for encodings
 * the codec does not write (runs written `<xx*N>`: byte xx, N times).
 */
import { DEFAULT_RULE } from '../rules.ts';
import {
  MAX_COUNT,
  MAX_FENCED_IDS,
  MAX_FRAME_BYTES,
  MAX_KEY_LENGTH,
  MAX_NAME_LENGTH,
  MAX_VALUE_BYTES,
  MsgType,
  packValue,
  PROTOCOL_VERSION,
} from './protocol.ts';
import type { Direction } from './vectors.ts';

export interface Case {
  name: string;
  direction: Direction;
  /** encoded with the codec (frames) or packValue (values) */
  input?: unknown;
  /** crafted bytes (hex, runs allowed), for encodings the codec does not write */
  hex?: string;
  note?: string;
}

/** A fixstr / str8 / str16 of an ASCII string, as msgpack writes it. */
function strHex(s: string): string {
  const body = Buffer.from(s, 'utf8').toString('hex');
  const n = s.length;
  if (n < 32) return (0xa0 | n).toString(16) + body;
  if (n < 256) return `d9${n.toString(16).padStart(2, '0')}${body}`;
  return `da${n.toString(16).padStart(4, '0')}${body}`;
}

const hello = {
  t: MsgType.Hello,
  v: PROTOCOL_VERSION,
  app: 'shop',
  instance: 'web-1-4242-a1b2c3',
  sdk: '@hotkey/sdk/0.1.0',
};
const promote = {
  t: MsgType.Promote,
  seq: 8,
  key: 'item:42',
  qps: 1530.5,
  hotMs: 30_000,
  cacheTtlMs: 5000,
  cache: true,
  at: 1_764_619_200_000,
};
const entry = { key: 'item:42', ttlMs: 29_400, cacheTtlMs: 5000, cache: true, qps: 1530.5 };
const welcome = {
  t: MsgType.Welcome,
  v: PROTOCOL_VERSION,
  hub: 'hub-a',
  epoch: 3,
  members: [
    { id: 'hub-a', url: 'ws://10.0.0.1:7070/ws' },
    { id: 'hub-b', url: 'ws://10.0.0.2:7070/ws' },
  ],
  rules: [{ ...DEFAULT_RULE, match: 'item:*', threshold: 500 }],
  local: [100],
  instances: 4,
  seq: 7,
};
const longKey = 'k'.repeat(MAX_KEY_LENGTH);

export const CASES: Case[] = [
  // ---- client -> hub ----
  { name: 'Hello, required fields only', direction: 'to-hub', input: hello },
  {
    name: 'Hello, every field',
    direction: 'to-hub',
    input: { ...hello, token: 's3cret', host: 'web-1', role: 'sdk' },
  },
  {
    name: 'Hello with an absent token written as fixext 1 type 0 (msgpackr undefined)',
    direction: 'to-hub',
    hex: `86a17401a17602a3617070${strHex('shop')}a5746f6b656ed40000a8696e7374616e6365${strHex('i-1')}a373646b${strHex('x')}`,
    note: 'the only ext token accepted anywhere: older encoders wrote it for an absent optional field; never write it',
  },
  {
    name: 'Hello with token nil',
    direction: 'to-hub',
    hex: `86a17401a17602a3617070${strHex('shop')}a5746f6b656ec0a8696e7374616e6365${strHex('i-1')}a373646b${strHex('x')}`,
    note: 'nil is not "absent": leave an optional field out of the map',
  },
  { name: 'Hello with an unknown role', direction: 'to-hub', input: { ...hello, role: 'robot' } },
  { name: 'Hello without v', direction: 'to-hub', input: { ...hello, v: undefined } },
  {
    name: 'Hello offering versions 2 to 3 (vmin)',
    direction: 'to-hub',
    input: { ...hello, v: 3, vmin: 2 },
    note: 'a hub speaking at most 2 welcomes it at v 2 (Versioning)',
  },
  {
    name: 'Hello of version 1 (no vmin, as a version-1 client sends it)',
    direction: 'to-hub',
    input: { ...hello, v: 1 },
    note: 'decodes; a hub admitting version 1 welcomes it at v 1, one that does not refuses it with 4001',
  },
  { name: 'Hello with vmin above v', direction: 'to-hub', input: { ...hello, v: 2, vmin: 3 } },
  {
    name: `Hello with an app name of ${MAX_NAME_LENGTH + 1} characters`,
    direction: 'to-hub',
    input: { ...hello, app: 'a'.repeat(MAX_NAME_LENGTH + 1) },
  },
  {
    name: 'Hello with an unknown field',
    direction: 'to-hub',
    input: { ...hello, future: [1, 2] },
    note: 'fields a version does not know are ignored (forward compatibility)',
  },
  { name: 'Report', direction: 'to-hub', input: { t: MsgType.Report, keys: ['item:42', 'cart:7'], counts: [120, 3] } },
  {
    name: 'Report with savings (hits, loads)',
    direction: 'to-hub',
    input: { t: MsgType.Report, keys: ['item:42', 'cart:7'], counts: [120, 3], hits: [118, 0], loads: [2, 0] },
  },
  { name: 'Report, empty', direction: 'to-hub', input: { t: MsgType.Report, keys: [], counts: [] } },
  {
    name: `Report, a key of ${MAX_KEY_LENGTH} characters and a count of MAX_COUNT`,
    direction: 'to-hub',
    input: { t: MsgType.Report, keys: [longKey], counts: [MAX_COUNT] },
  },
  {
    name: `Report, a key of ${MAX_KEY_LENGTH + 1} characters`,
    direction: 'to-hub',
    input: { t: MsgType.Report, keys: [`${longKey}k`], counts: [1] },
  },
  { name: 'Report, an empty key', direction: 'to-hub', input: { t: MsgType.Report, keys: [''], counts: [1] } },
  {
    name: 'Report, a count over MAX_COUNT',
    direction: 'to-hub',
    input: { t: MsgType.Report, keys: ['a'], counts: [MAX_COUNT + 1] },
  },
  { name: 'Report, a negative count', direction: 'to-hub', input: { t: MsgType.Report, keys: ['a'], counts: [-1] } },
  { name: 'Report, a fractional count', direction: 'to-hub', input: { t: MsgType.Report, keys: ['a'], counts: [1.5] } },
  {
    name: 'Report, a count written as float 64 (2.0)',
    direction: 'to-hub',
    hex: `83a17403a46b65797391${strHex('a')}a6636f756e747391cb4000000000000000`,
    note: 'an integer field may arrive in any msgpack number format that holds an integer value',
  },
  {
    name: 'Report, keys and counts of different lengths',
    direction: 'to-hub',
    input: { t: MsgType.Report, keys: ['a', 'b'], counts: [1] },
  },
  {
    name: 'Report, hits without loads',
    direction: 'to-hub',
    input: { t: MsgType.Report, keys: ['a'], counts: [1], hits: [1] },
  },
  { name: 'InvalidateRequest', direction: 'to-hub', input: { t: MsgType.InvalidateRequest, id: 1, key: 'item:42' } },
  {
    name: 'InvalidateRequest, a flushed namespace',
    direction: 'to-hub',
    input: { t: MsgType.InvalidateRequest, id: 2, key: '127.0.0.1:6379/0', flush: true },
  },
  {
    name: 'InvalidateRequest, an update (value, since, form)',
    direction: 'to-hub',
    input: {
      t: MsgType.InvalidateRequest,
      id: 3,
      key: 'item:42',
      value: packValue({ price: 10 }),
      since: 7,
      form: 1,
    },
  },
  {
    name: 'InvalidateRequest, only the value this session pushed',
    direction: 'to-hub',
    input: { t: MsgType.InvalidateRequest, id: 4, key: 'item:42', pushed: true },
  },
  {
    name: 'InvalidateRequest, a flush with a value',
    direction: 'to-hub',
    input: { t: MsgType.InvalidateRequest, id: 5, key: 'ns', flush: true, value: new Uint8Array([0xc0]), since: 0 },
  },
  {
    name: 'InvalidateRequest, since without value',
    direction: 'to-hub',
    input: { t: MsgType.InvalidateRequest, id: 6, key: 'item:42', since: 7 },
  },
  {
    name: 'InvalidateRequest, flush not a boolean',
    direction: 'to-hub',
    input: { t: MsgType.InvalidateRequest, id: 7, key: 'item:42', flush: 1 },
  },
  { name: 'Applied', direction: 'to-hub', input: { t: MsgType.Applied, seq: 7 } },
  { name: 'Applied, a negative seq', direction: 'to-hub', input: { t: MsgType.Applied, seq: -1 } },
  { name: 'Resync', direction: 'to-hub', input: { t: MsgType.Resync } },
  { name: 'Lease', direction: 'to-hub', input: { t: MsgType.Lease, id: 3 } },
  { name: 'Applied with d (3)', direction: 'to-hub', input: { t: MsgType.Applied, seq: 7, d: 2 } },
  {
    name: 'Hold (3)',
    direction: 'to-hub',
    input: { t: MsgType.Hold, id: 1, keys: ['item:42', 'item:43'], since: [17, 12] },
  },
  {
    name: 'Hold, keys and since differ in length (3)',
    direction: 'to-hub',
    input: { t: MsgType.Hold, id: 1, keys: ['item:42', 'item:43'], since: [17] },
  },
  { name: 'Hold, no keys (3)', direction: 'to-hub', input: { t: MsgType.Hold, id: 1, keys: [], since: [] } },
  {
    name: 'Hold, a negative since (3)',
    direction: 'to-hub',
    input: { t: MsgType.Hold, id: 1, keys: ['item:42'], since: [-1] },
  },
  { name: 'Release (3)', direction: 'to-hub', input: { t: MsgType.Release, keys: ['item:42'] } },
  { name: 'Release, an empty key (3)', direction: 'to-hub', input: { t: MsgType.Release, keys: [''] } },
  {
    name: 'Lease, an id above 2^32 (written as float 64)',
    direction: 'to-hub',
    input: { t: MsgType.Lease, id: 2 ** 40 },
    note: 'this codec writes integers outside the 32-bit ranges as float 64',
  },
  {
    name: 'Push',
    direction: 'to-hub',
    input: { t: MsgType.Push, key: 'item:42', ver: 12, value: packValue({ price: 10 }) },
  },
  {
    name: 'Push, a cache record (form 1)',
    direction: 'to-hub',
    input: { t: MsgType.Push, key: 'item:42', ver: 12, value: new Uint8Array([0x93, 1, 2, 3]), form: 1 },
  },
  {
    name: 'Push, an unknown form',
    direction: 'to-hub',
    input: { t: MsgType.Push, key: 'item:42', ver: 12, value: new Uint8Array([0xc0]), form: 2 },
  },
  {
    name: 'Push, a value that is not bin',
    direction: 'to-hub',
    input: { t: MsgType.Push, key: 'item:42', ver: 12, value: 'text' },
  },
  {
    name: `Push, a value of ${MAX_VALUE_BYTES + 1} bytes (over MAX_VALUE_BYTES)`,
    direction: 'to-hub',
    input: { t: MsgType.Push, key: 'k', ver: 1, value: new Uint8Array(MAX_VALUE_BYTES + 1) },
  },
  { name: 'a hub message sent to the hub (Grant)', direction: 'to-hub', input: { t: MsgType.Grant, id: 1, ms: 2000 } },
  { name: 'an unknown message type', direction: 'to-hub', input: { t: 99 } },
  { name: 'no t', direction: 'to-hub', input: { id: 1 } as unknown },
  { name: 't a string', direction: 'to-hub', input: { t: '14' } as unknown },
  {
    name: 't written twice, nil last',
    direction: 'to-hub',
    hex: '82a1740ea174c0',
    note: 'a key written twice: the last one counts',
  },
  { name: 'an array, not a map', direction: 'to-hub', hex: '910e' },
  { name: 'a positive fixint, not a map', direction: 'to-hub', hex: '0e' },
  { name: 'truncated map', direction: 'to-hub', hex: '82a1740e' },
  { name: 'bytes after the map', direction: 'to-hub', hex: '81a1740e00' },
  { name: 'the never-used byte 0xc1', direction: 'to-hub', hex: '81a174c1' },
  {
    name: 'an ext token: a timestamp (Date)',
    direction: 'to-hub',
    hex: '82a1740ea164d6ff00000000',
  },
  { name: 'an ext token: fixext 1 of type 1', direction: 'to-hub', hex: '82a1740ea178d40100' },
  { name: 'an ext token: ext 8 (a msgpackr record)', direction: 'to-hub', hex: '82a1740ea178c7017200' },
  {
    name: `a frame of ${MAX_FRAME_BYTES + 1} bytes (over MAX_FRAME_BYTES)`,
    direction: 'to-hub',
    hex: `82a1740ea178c6${(MAX_FRAME_BYTES - 10).toString(16).padStart(8, '0')}<00*${MAX_FRAME_BYTES - 10}>`,
  },

  // ---- hub -> client ----
  {
    name: 'Welcome',
    direction: 'to-client',
    input: welcome,
    note: 'rules as parseRules leaves them: every default filled in',
  },
  {
    name: 'Welcome, a rule with defaults left out',
    direction: 'to-client',
    input: { ...welcome, rules: [{ match: 'item:*', threshold: 500 }] },
    note: 'the client fills in the defaults (rules.ts RULE_DEFAULTS)',
  },
  {
    name: 'Welcome, local not one per rule',
    direction: 'to-client',
    input: { ...welcome, local: [100, 5] },
  },
  {
    name: 'Welcome, a rule that does not validate',
    direction: 'to-client',
    input: { ...welcome, rules: [{ match: 'item:*', threshold: 0 }] },
  },
  {
    name: 'Config',
    direction: 'to-client',
    input: { t: MsgType.Config, rules: welcome.rules, local: [50], instances: 10 },
  },
  {
    name: 'Members',
    direction: 'to-client',
    input: { t: MsgType.Members, epoch: 4, members: [{ id: 'hub-a', url: 'ws://10.0.0.1:7070/ws' }] },
  },
  { name: 'Promote', direction: 'to-client', input: promote, note: '`at` (ms since epoch) is a float 64 on the wire' },
  {
    name: 'Promote, write-hot with replicas',
    direction: 'to-client',
    input: { ...promote, cache: false, kind: 'write', replicas: 3 },
  },
  { name: 'Promote, replicas 65', direction: 'to-client', input: { ...promote, replicas: 65 } },
  { name: 'Promote, an unknown kind', direction: 'to-client', input: { ...promote, kind: 'sideways' } },
  { name: 'Promote, no cache field', direction: 'to-client', input: { ...promote, cache: undefined } },
  {
    name: `Promote, a key of ${MAX_KEY_LENGTH + 1} characters`,
    direction: 'to-client',
    input: { ...promote, key: `${longKey}k` },
  },
  { name: 'Invalidate', direction: 'to-client', input: { t: MsgType.Invalidate, seq: 9, key: 'item:42' } },
  {
    name: 'Invalidate, a flushed namespace',
    direction: 'to-client',
    input: { t: MsgType.Invalidate, seq: 10, key: '127.0.0.1:6379/0', flush: true },
  },
  {
    name: 'Invalidate, an update (value, ver)',
    direction: 'to-client',
    input: { t: MsgType.Invalidate, seq: 11, key: 'item:42', value: packValue({ price: 11 }), ver: 13 },
  },
  {
    name: 'Invalidate, an update without ver',
    direction: 'to-client',
    input: { t: MsgType.Invalidate, seq: 11, key: 'item:42', value: packValue({ price: 11 }) },
  },
  { name: 'Demote', direction: 'to-client', input: { t: MsgType.Demote, seq: 12, key: 'item:42' } },
  { name: 'Snapshot, empty', direction: 'to-client', input: { t: MsgType.Snapshot, seq: 7, hot: [] } },
  {
    name: 'Snapshot',
    direction: 'to-client',
    input: {
      t: MsgType.Snapshot,
      seq: 12,
      hot: [entry, { ...entry, key: 'counter:1', cache: false, kind: 'any', replicas: 2 }],
    },
  },
  {
    name: 'Snapshot, an entry without ttlMs',
    direction: 'to-client',
    input: { t: MsgType.Snapshot, seq: 12, hot: [{ ...entry, ttlMs: undefined }] },
  },
  {
    name: 'Error',
    direction: 'to-client',
    input: {
      t: MsgType.Error,
      code: 'HK_ERR_AUTH',
      message: 'app "shop" is unknown here or its token is missing or wrong',
    },
  },
  {
    name: 'Ack',
    direction: 'to-client',
    input: { t: MsgType.Ack, id: 1, seq: 9, fenced: ['web-3-77-c0ffee'], ms: 2104.5 },
  },
  {
    name: 'Ack, fenced and ms left out',
    direction: 'to-client',
    input: { t: MsgType.Ack, id: 1, seq: 9 },
    note: 'decoded as fenced [] and ms 0',
  },
  {
    name: `Ack, ${MAX_FENCED_IDS + 1} fenced ids`,
    direction: 'to-client',
    input: {
      t: MsgType.Ack,
      id: 1,
      seq: 9,
      fenced: Array.from({ length: MAX_FENCED_IDS + 1 }, (_, i) => `i${i}`),
      ms: 1,
    },
  },
  { name: 'Grant', direction: 'to-client', input: { t: MsgType.Grant, id: 3, ms: 2000 } },
  {
    name: 'Grant with the write clock (3)',
    direction: 'to-client',
    input: { t: MsgType.Grant, id: 3, ms: 2000, w: 41 },
  },
  {
    name: 'Held: recorded, written, over share, not owner, full (3)',
    direction: 'to-client',
    input: { t: MsgType.Held, id: 1, r: [0, 1, 2, 3, 4], w: 41 },
  },
  { name: 'Held, an unknown result (3)', direction: 'to-client', input: { t: MsgType.Held, id: 1, r: [5], w: 41 } },
  { name: 'Drop (3)', direction: 'to-client', input: { t: MsgType.Drop, d: 1, keys: ['item:42'], w: 42 } },
  { name: 'Drop, d 0 (3)', direction: 'to-client', input: { t: MsgType.Drop, d: 0, keys: ['item:42'], w: 42 } },
  { name: 'Grant, over an hour', direction: 'to-client', input: { t: MsgType.Grant, id: 3, ms: 3_600_001 } },
  { name: 'Fill', direction: 'to-client', input: { t: MsgType.Fill, key: 'item:42', ver: 12 } },
  {
    name: 'Value',
    direction: 'to-client',
    input: { t: MsgType.Value, key: 'item:42', ver: 12, value: packValue({ price: 10 }) },
  },
  {
    name: 'Value, a cache record (form 1)',
    direction: 'to-client',
    input: { t: MsgType.Value, key: 'item:42', ver: 12, value: new Uint8Array([0x93, 1, 2, 3]), form: 1 },
  },
  {
    name: 'Limit',
    direction: 'to-client',
    input: { t: MsgType.Limit, keys: ['api:login', 'api:search'], rates: [12.5, 0], ttlMs: 3000 },
  },
  {
    name: 'Limit, keys and rates of different lengths',
    direction: 'to-client',
    input: { t: MsgType.Limit, keys: ['api:login'], rates: [], ttlMs: 3000 },
  },
  { name: 'a client message sent to a client (Hello)', direction: 'to-client', input: hello },

  // ---- pushed values (packValue): opaque to the hub, read by SDKs of the same app ----
  {
    name: 'value: a plain object',
    direction: 'value',
    input: { id: 42, name: 'mug', tags: ['a'], price: 9.5, gone: null },
  },
  { name: 'value: a string', direction: 'value', input: 'hello' },
  { name: 'value: a Date (timestamp ext -1)', direction: 'value', input: new Date(1_764_619_200_000) },
  { name: 'value: a Set (ext 0x73)', direction: 'value', input: new Set(['a', 'b']) },
  { name: 'value: a bigint within 64 bits (int 64)', direction: 'value', input: -5n },
  { name: 'value: a bigint beyond 64 bits (ext 0x42)', direction: 'value', input: 2n ** 70n },
  { name: 'value: a Uint8Array (ext 0x74)', direction: 'value', input: new Uint8Array([1, 2, 3]) },
  { name: 'value: undefined inside an array (fixext 1 type 0)', direction: 'value', input: [undefined, 1] },
];
