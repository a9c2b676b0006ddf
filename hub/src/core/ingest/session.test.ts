import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pack } from 'msgpackr';
import {
  CloseCode,
  decodeServerMessage,
  encode,
  MAX_KEY_LENGTH,
  MsgType,
  PROTOCOL_VERSION,
  type Message,
  type ServerMessage,
} from '@hotkey/sdk/protocol';
import { parseRules } from '@hotkey/sdk/rules';
import { HubCore } from '../hub-core.ts';
import { LocalCoordinator } from '../../cluster/local-coordinator.ts';
import { DEFAULT_TUNABLES } from '../tunables.ts';
import type { Peer } from '../peer.ts';
import { delay, waitFor } from '../../../../test/support/wait.ts';

/** An in-memory end of a connection: what the hub sent, and how it closed. */
class MemoryPeer implements Peer {
  readonly frames: ServerMessage[] = [];
  closedWith: { code: number; reason: string } | undefined;
  bufferedAmount = 0;
  send(data: Uint8Array): void {
    if (this.closedWith) throw new Error('send after close');
    this.frames.push(decodeServerMessage(data));
  }
  close(code: number, reason: string): void {
    this.closedWith ??= { code, reason };
  }
  errors(): string[] {
    return this.frames.flatMap((f) => (f.t === MsgType.Error ? [f.code] : []));
  }
}

// intakeTurnMs: these tests run many frames in one event loop turn and read the results synchronously
function setup() {
  let now = 1_000_000;
  const config = { apps: { shop: { token: 'tok', rules: parseRules([{ match: 'item:*', threshold: 10 }]) } } };
  const coordinator = new LocalCoordinator({ selfId: 'h1', config });
  const logs: string[] = [];
  // warnings and errors as one line: the message and the error it carries
  const line = (o: object, m?: string) => void logs.push(`${m ?? ''} ${String((o as { err?: unknown }).err ?? '')}`);
  const core = new HubCore({
    id: 'h1',
    coordinator,
    tunables: { ...DEFAULT_TUNABLES, helloTimeoutMs: 5000, intakeTurnMs: 60_000 },
    wallNow: () => now,
    logger: { debug() {}, info() {}, warn: line, error: line },
  });
  const open = (frames: (Message | Uint8Array | string)[] = []) => {
    const peer = new MemoryPeer();
    const session = core.attach(peer);
    for (const f of frames) {
      if (typeof f === 'string') session.onFrame(Buffer.from(f), false);
      else session.onFrame(f instanceof Uint8Array ? f : encode(f), true);
    }
    return { peer, session };
  };
  const hello = (extra: Record<string, unknown> = {}) =>
    ({
      t: MsgType.Hello,
      v: PROTOCOL_VERSION,
      app: 'shop',
      token: 'tok',
      instance: 'i1',
      sdk: 't',
      ...extra,
    }) as Message;
  return { core, open, hello, logs, advance: (ms: number) => (now += ms) };
}

test('hello -> Welcome + Snapshot; reports promote', () => {
  const { open, hello } = setup();
  const { peer, session } = open([hello()]);
  assert.equal(
    peer.frames.map((f) => f.t),
    [MsgType.Welcome, MsgType.Snapshot],
  );
  assert.is(session.state, 'open');
  session.onFrame(encode({ t: MsgType.Report, keys: ['item:1'], counts: [10] }), true);
  const p = peer.frames.at(-1)!;
  assert.is(p.t, MsgType.Promote);
  assert.is(p.t === MsgType.Promote && p.seq, 1);
});

const cases: [string, (h: ReturnType<typeof setup>['hello']) => (Message | Uint8Array | string)[], number, string][] = [
  ['garbage', () => [new Uint8Array([0xc1])], CloseCode.Protocol, 'HK_ERR_PROTOCOL'],
  ['empty frame', () => [new Uint8Array(0)], CloseCode.Protocol, 'HK_ERR_PROTOCOL'],
  ['text frame', () => ['hello'], CloseCode.Protocol, 'HK_ERR_PROTOCOL'],
  ['msgpack array', () => [pack([1, 2])], CloseCode.Protocol, 'HK_ERR_PROTOCOL'],
  ['unknown type', () => [pack({ t: 77 })], CloseCode.Protocol, 'HK_ERR_PROTOCOL'],
  ['server type from a client', (h) => [h(), pack({ t: MsgType.Welcome })], CloseCode.Protocol, 'HK_ERR_PROTOCOL'],
  ['Report before Hello', () => [{ t: MsgType.Report, keys: [], counts: [] }], CloseCode.Protocol, 'HK_ERR_PROTOCOL'],
  ['second Hello', (h) => [h(), h()], CloseCode.Protocol, 'HK_ERR_PROTOCOL'],
  ['wrong version', (h) => [h({ v: PROTOCOL_VERSION + 1 })], CloseCode.Version, 'HK_ERR_VERSION'],
  // an unknown app is answered like a bad token: a Hello cannot probe which apps exist
  ['unknown app', (h) => [h({ app: 'blog' })], CloseCode.Auth, 'HK_ERR_AUTH'],
  ['app name with control characters', (h) => [h({ app: 'sh\u0000op' })], CloseCode.UnknownApp, 'HK_ERR_UNKNOWN_APP'],
  ['bad token', (h) => [h({ token: 'tok2' })], CloseCode.Auth, 'HK_ERR_AUTH'],
  ['missing token', (h) => [h({ token: undefined })], CloseCode.Auth, 'HK_ERR_AUTH'],
  ['dashboard role', (h) => [h({ role: 'dashboard' })], CloseCode.Protocol, 'HK_ERR_PROTOCOL'],
  [
    'long key',
    (h) => [h(), pack({ t: MsgType.Report, keys: ['k'.repeat(MAX_KEY_LENGTH + 1)], counts: [1] })],
    CloseCode.KeyTooLong,
    'HK_ERR_KEY_TOO_LONG',
  ],
  [
    'negative count',
    (h) => [h(), pack({ t: MsgType.Report, keys: ['k'], counts: [-1] })],
    CloseCode.Protocol,
    'HK_ERR_PROTOCOL',
  ],
  // Reports the in-place reader (report-frame.ts) leaves to the decoder: its codes, as ever
  [
    'long key in surrogate pairs',
    (h) => [h(), pack({ t: MsgType.Report, keys: ['🔥'.repeat(MAX_KEY_LENGTH / 2 + 1)], counts: [1] })],
    CloseCode.KeyTooLong,
    'HK_ERR_KEY_TOO_LONG',
  ],
  [
    'empty key',
    (h) => [h(), pack({ t: MsgType.Report, keys: [''], counts: [1] })],
    CloseCode.KeyTooLong,
    'HK_ERR_KEY_TOO_LONG',
  ],
  [
    'count over 2^31 - 1',
    (h) => [h(), pack({ t: MsgType.Report, keys: ['k'], counts: [2 ** 31] })],
    CloseCode.Protocol,
    'HK_ERR_PROTOCOL',
  ],
  [
    'hits without loads',
    (h) => [h(), pack({ t: MsgType.Report, keys: ['k'], counts: [1], hits: [1] })],
    CloseCode.Protocol,
    'HK_ERR_PROTOCOL',
  ],
  ['Applied ahead of the hub', (h) => [h(), { t: MsgType.Applied, seq: 5 }], CloseCode.Protocol, 'HK_ERR_PROTOCOL'],
];

for (const [name, frames, code, error] of cases) {
  test(`${name}: Error ${error} + close ${code}, others unaffected`, () => {
    const { open, hello, core } = setup();
    const healthy = open([hello({ instance: 'healthy' })]);
    const { peer, session } = open(frames(hello));
    assert.is(peer.closedWith?.code, code);
    assert.equal(peer.errors(), [error]);
    assert.is(session.state, 'closed');
    session.onFrame(encode(hello()), true); // frames after the fault are ignored
    assert.is(peer.errors().length, 1);
    assert.is(core.connections, 1, 'only the healthy session counts');
    healthy.session.onFrame(encode({ t: MsgType.Report, keys: ['item:2'], counts: [10] }), true);
    assert.is(healthy.peer.frames.at(-1)?.t, MsgType.Promote);
    assert.is(healthy.peer.closedWith, undefined);
  });
}

test('a Report read in place and one the decoder reads count alike: threshold, savings, steps', async () => {
  const { open, hello, core } = setup();
  const { peer, session } = open([hello()]);
  const promoted = () => peer.frames.flatMap((f) => (f.t === MsgType.Promote ? [f.key] : []));
  // an extra field: valid, but not the reader's shape, so the decoder reads it
  session.onFrame(pack({ t: MsgType.Report, keys: ['item:1', 'item:2'], counts: [4, 9], x: 1 }), true);
  session.onFrame(encode({ t: MsgType.Report, keys: ['item:1', 'item:2'], counts: [5, 0] }), true);
  assert.equal(promoted(), []);
  session.onFrame(encode({ t: MsgType.Report, keys: ['item:1'], counts: [1] }), true);
  assert.equal(promoted(), ['item:1'], 'the 10th access, whichever way it came');

  const savings = (extra: object) =>
    pack({ t: MsgType.Report, keys: ['item:1', 'item:2'], counts: [1, 0], hits: [7, 3], loads: [2, 1], ...extra });
  session.onFrame(savings({}), true);
  session.onFrame(savings({ x: 1 }), true);
  assert.is(core.metrics.localHits, 14, 'hot keys only (item:2 is not hot)');
  assert.is(core.metrics.loaderCalls, 4);

  // more records than one intake step, the last key crossing at its very end
  const keys = Array.from({ length: 9000 }, (_, i) => `item:m${i}`);
  const counts = keys.map((_, i) => (i === keys.length - 1 ? 10 : 1));
  const records = core.metrics.records;
  session.onFrame(encode({ t: MsgType.Report, keys, counts }), true);
  await waitFor('the long report', () => core.metrics.records === records + keys.length, 5000);
  assert.equal(promoted(), ['item:1', 'item:m8999']);
});

test('hello timeout is driven by the injected clock', () => {
  const { open, core, advance, hello } = setup();
  const { peer } = open();
  const ok = open([hello()]);
  advance(4999);
  core.tick();
  assert.is(peer.closedWith, undefined);
  advance(1);
  core.tick();
  assert.is(peer.closedWith?.code, CloseCode.HelloTimeout);
  assert.equal(peer.errors(), ['HK_ERR_HELLO_TIMEOUT']);
  assert.is(ok.peer.closedWith, undefined);
});

test('a fault inside the hub closes only that session with 1011 and is logged', () => {
  const { open, hello, logs } = setup();
  const { peer } = open([hello()]);
  // a peer whose send throws stands in for any failure inside the hub while handling a frame
  const broken = open([hello({ instance: 'b' })]);
  broken.peer.send = () => {
    throw new Error('boom');
  };
  broken.session.onFrame(encode({ t: MsgType.Resync }), true);
  assert.is(broken.peer.closedWith?.code, 1011);
  assert.ok(logs.some((l) => l.includes('boom')));
  assert.is(peer.closedWith, undefined);
});

test('slow consumer: a socket over the buffer limit is closed with 4008 and leaves the app', () => {
  const { open, hello, core } = setup();
  const a = open([hello({ instance: 'a' })]);
  const b = open([hello({ instance: 'b' })]);
  b.peer.bufferedAmount = DEFAULT_TUNABLES.maxBufferedBytes + 1;
  a.session.onFrame(encode({ t: MsgType.Report, keys: ['item:1'], counts: [10] }), true);
  assert.is(b.peer.closedWith?.code, CloseCode.SlowConsumer);
  assert.is(a.peer.frames.at(-1)?.t, MsgType.Promote);
  assert.is(core.metrics.slowConsumers, 1);
  assert.is(core.connections, 1);
});

test('Resyncs: the first is answered at once, the rest within the interval coalesce into one later Snapshot', () => {
  const { open, hello } = setup();
  const { peer, session } = open([hello()]);
  const snapshots = () => peer.frames.filter((f) => f.t === MsgType.Snapshot).length;
  assert.is(snapshots(), 1, 'the Welcome snapshot');
  for (let i = 0; i < 50; i++) session.onFrame(encode({ t: MsgType.Resync }), true);
  assert.is(snapshots(), 2, 'one answered now, 49 waiting for the interval to end');
  assert.equal(session.resyncs, { answered: 1, coalesced: 49 });
  session.onClose(); // clears the pending answer: nothing is sent after close
  assert.is(snapshots(), 2);
});

test('a Lease skips its own backlog, one per 100 ms; faster ones wait their turn', async () => {
  const { open, hello } = setup();
  const { peer, session } = open([hello()]);
  const grants = () => peer.frames.filter((f) => f.t === MsgType.Grant).length;
  // over 64 KiB: always queued, drained after pending I/O
  const keys = Array.from({ length: 8000 }, (_, i) => `item:backlog-${i}`);
  session.onFrame(encode({ t: MsgType.Report, keys, counts: keys.map(() => 1) }), true);
  session.onFrame(encode({ t: MsgType.Lease, id: 1 }), true);
  assert.is(grants(), 1, 'granted at once, ahead of the queued report');
  session.onFrame(encode({ t: MsgType.Lease, id: 2 }), true);
  assert.is(grants(), 1, 'a second within 100 ms is queued behind the report');
  await delay(110); // the session's rate limit reads the real clock; the queue drains meanwhile
  assert.is(grants(), 2, 'the queued one was answered in turn');
  session.onFrame(encode({ t: MsgType.Report, keys, counts: keys.map(() => 1) }), true);
  session.onFrame(encode({ t: MsgType.Lease, id: 3 }), true);
  assert.is(grants(), 3, 'the next interval skips again');
  assert.equal(
    peer.frames.filter((f) => f.t === MsgType.Grant).map((f) => (f as { id: number }).id),
    [1, 2, 3],
  );
});

test.run();
