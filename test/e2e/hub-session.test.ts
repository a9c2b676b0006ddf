import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pack } from 'msgpackr';
import type WebSocket from 'ws';
import { DEFAULT_TUNABLES } from '@hotkey/hub';
import { CloseCode, MAX_FRAME_BYTES, MAX_KEY_LENGTH, MsgType, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';
import { DEFAULT_RULE, localThreshold } from '@hotkey/sdk/rules';
import { RawClient } from '../support/raw-client.ts';
import { hubInProcess, startHubInProcess } from '../support/e2e.ts';
import { delay } from '../support/wait.ts';

const config = {
  apps: {
    shop: {
      token: 's3cret',
      rules: [{ match: 'item:*', threshold: 100, windowMs: 1000, hotMs: 30_000, cacheTtlMs: 5000 }],
    },
    open: {},
  },
};

const e2e = hubInProcess(
  test,
  { config, tunables: { helloTimeoutMs: 20_000, leaseMs: 400, configDebounceMs: 20 } },
  { closePeersAfterEach: true },
);
const join = (app: string, opts: { token?: string; instance?: string; v?: number } = {}) => e2e.join(app, opts);
const connect = () => e2e.connect();

test('hello gets Welcome with rules, local thresholds, members and seq, then a Snapshot', async () => {
  const { welcome, snapshot } = await join('shop', { token: 's3cret', instance: 'a' });
  assert.is(welcome.v, PROTOCOL_VERSION);
  assert.is(welcome.hub, e2e.hub.id);
  assert.equal(welcome.members, [{ id: e2e.hub.id, url: e2e.hub.url }]);
  assert.is(welcome.rules.length, 1);
  assert.is(welcome.rules[0]!.match, 'item:*');
  assert.equal(welcome.local, [localThreshold(welcome.rules[0]!, 1)]);
  assert.is(welcome.instances, 1);
  assert.is(snapshot.seq, welcome.seq);
  assert.equal(snapshot.hot, []);

  const open = await join('open');
  assert.equal(open.welcome.rules, [DEFAULT_RULE], 'an app without rules gets the default rule');
  assert.equal(open.welcome.local, [200]);
});

test('a second instance triggers Config with the new instance count and local thresholds', async () => {
  const a = await join('shop', { token: 's3cret', instance: 'cfg-a' });
  const b = await join('shop', { token: 's3cret', instance: 'cfg-b' });
  assert.is(b.welcome.instances, 2);
  const cfg = await a.client.next(MsgType.Config, 2000, (m) => m.instances === 2);
  assert.equal(cfg.local, [localThreshold(cfg.rules[0]!, 2)]);
});

test('reports crossing the threshold promote, broadcast to every SDK of the app only', async () => {
  const a = await join('shop', { token: 's3cret', instance: 'p-a' });
  const b = await join('shop', { token: 's3cret', instance: 'p-b' });
  const other = await join('open', { instance: 'p-o' });
  a.client.send({ t: MsgType.Report, keys: ['item:p1', 'user:1'], counts: [60, 500] });
  await a.client.ping();
  assert.not.ok(
    a.client.pending().some((m) => m.t === MsgType.Promote),
    '60 of 100 is not hot; user:1 matches no rule',
  );
  b.client.send({ t: MsgType.Report, keys: ['item:p1'], counts: [40] });
  const pa = await a.client.next(MsgType.Promote);
  const pb = await b.client.next(MsgType.Promote);
  assert.equal(pa, pb, 'same frame to every socket');
  assert.is(pa.key, 'item:p1');
  // 100 accesses over the time the window covers: 9 slices of 100 ms plus 0..100 ms of the current one
  assert.ok(pa.qps >= 100 && pa.qps <= (100 * 1000) / 900, `qps ${pa.qps}`);
  assert.is(pa.hotMs, 30_000);
  assert.is(pa.cacheTtlMs, 5000);
  assert.is(pa.cache, true);
  assert.ok(pa.seq > 0);
  await other.client.ping();
  assert.not.ok(
    other.client.received.some((m) => m.t === MsgType.Promote),
    'other apps hear nothing',
  );

  const late = await join('shop', { token: 's3cret', instance: 'p-late' });
  assert.is(late.welcome.seq, pa.seq);
  const entry = late.snapshot.hot.find((h) => h.key === 'item:p1');
  assert.ok(entry, 'a new SDK gets the hot set in its Snapshot');
  assert.ok(entry!.ttlMs > 29_000 && entry!.ttlMs <= 30_000);
});

// version 2 sessions: every invalidation is broadcast to the app (version 3 directs it at the
// key's holders: hub-holders.test.ts)
test('invalidation is acked only after every connected SDK applied it', async () => {
  const w = await join('shop', { token: 's3cret', instance: 'inv-w', v: 2 });
  const r = await join('shop', { token: 's3cret', instance: 'inv-r', v: 2 });
  r.client.send({ t: MsgType.Lease, id: 1 });
  assert.equal(await r.client.next(MsgType.Grant), { t: MsgType.Grant, id: 1, ms: 400 });
  w.client.send({ t: MsgType.InvalidateRequest, id: 7, key: 'item:x' });
  const iw = await w.client.next(MsgType.Invalidate);
  const ir = await r.client.next(MsgType.Invalidate);
  assert.equal(iw, ir);
  assert.is(iw.key, 'item:x');
  w.client.send({ t: MsgType.Applied, seq: iw.seq });
  await w.client.ping(); // the hub has processed the writer's Applied
  assert.not.ok(
    w.client.pending().some((m) => m.t === MsgType.Ack),
    'no ack while the reader has not applied and its lease runs',
  );
  r.client.send({ t: MsgType.Applied, seq: ir.seq });
  const ack = await w.client.next(MsgType.Ack, 2000);
  assert.equal({ ...ack, ms: 0 }, { t: MsgType.Ack, id: 7, seq: iw.seq, fenced: [], ms: 0 });
});

test('a flush (InvalidateRequest with flush) is broadcast with its flag and acked the same way', async () => {
  const w = await join('shop', { token: 's3cret', instance: 'flush-w' });
  const r = await join('shop', { token: 's3cret', instance: 'flush-r' });
  w.client.send({ t: MsgType.InvalidateRequest, id: 8, key: '127.0.0.1:6379/0', flush: true });
  const iw = await w.client.next(MsgType.Invalidate);
  const ir = await r.client.next(MsgType.Invalidate);
  assert.equal(ir, { t: MsgType.Invalidate, seq: iw.seq, key: '127.0.0.1:6379/0', flush: true });
  w.client.send({ t: MsgType.Applied, seq: iw.seq });
  r.client.send({ t: MsgType.Applied, seq: ir.seq });
  // an earlier test's closed session may still hold a lease: it is waited out and named
  const ack = await w.client.next(MsgType.Ack, 2000);
  assert.equal({ ...ack, fenced: [], ms: 0 }, { t: MsgType.Ack, id: 8, seq: iw.seq, fenced: [], ms: 0 });
});

test('an SDK that never applies is fenced once its lease lapsed (no renewal meanwhile); a closed one holds the ack until its lease lapses', async () => {
  const w = await join('shop', { token: 's3cret', instance: 'to-w', v: 2 });
  const silent = await join('shop', { token: 's3cret', instance: 'to-s', v: 2 });
  silent.client.send({ t: MsgType.Lease, id: 1 });
  await silent.client.next(MsgType.Grant);
  const started = Date.now();
  w.client.send({ t: MsgType.InvalidateRequest, id: 1, key: 'item:t' });
  const inv = await w.client.next(MsgType.Invalidate);
  w.client.send({ t: MsgType.Applied, seq: inv.seq });
  await silent.client.next(MsgType.Invalidate);
  await delay(100);
  silent.client.send({ t: MsgType.Lease, id: 2 }); // behind an invalidation older than leaseMs / 8: refused
  const ack = await w.client.next(MsgType.Ack, 3000);
  assert.is(ack.id, 1);
  assert.ok(ack.fenced.includes('to-s') && !ack.fenced.includes('to-w'), `fenced: ${ack.fenced}`);
  assert.ok(Date.now() - started >= 350, 'waited out the 400 ms lease');
  assert.ok(ack.ms >= 350 && ack.ms < 1000, `ack.ms ${ack.ms}`);
  assert.not.ok(
    silent.client.pending().some((m) => m.t === MsgType.Grant),
    'no lease renewal while behind the invalidation',
  );

  silent.client.send({ t: MsgType.Applied, seq: inv.seq });
  silent.client.send({ t: MsgType.Lease, id: 3 });
  assert.is((await silent.client.next(MsgType.Grant)).id, 3, 'granted again once it applied');
  const t0 = Date.now();
  silent.client.close();
  await silent.client.closeEvent();
  w.client.send({ t: MsgType.InvalidateRequest, id: 2, key: 'item:t' });
  const inv2 = await w.client.next(MsgType.Invalidate);
  w.client.send({ t: MsgType.Applied, seq: inv2.seq });
  const ack2 = await w.client.next(MsgType.Ack, 3000);
  assert.is(ack2.id, 2);
  assert.ok(ack2.fenced.includes('to-s'), `fenced: ${ack2.fenced}`);
  assert.ok(Date.now() - t0 >= 350, 'a closed socket is no proof: its lease is waited out');

  // visible: the event carries the ack time and the fenced instance; /metrics the lag histogram
  const events = (await (await fetch(`${e2e.hub.httpUrl}/api/events?since=0`)).json()) as {
    events: { type: string; key: string; ackMs?: number; fenced?: string[] }[];
  };
  const acked = events.events.filter((e) => e.type === 'invalidate' && e.key === 'item:t');
  assert.is(acked.length, 2);
  assert.ok(
    acked.every((e) => typeof e.ackMs === 'number' && e.ackMs >= 300 && e.fenced?.includes('to-s')),
    JSON.stringify(acked),
  );
  const metrics = await (await fetch(`${e2e.hub.httpUrl}/metrics`)).text();
  assert.match(metrics, /# TYPE hotkey_invalidation_ack_seconds histogram/);
  assert.match(metrics, /hotkey_invalidation_ack_seconds_bucket\{le="0.5",app="shop"\} \d+/);
  assert.match(metrics, /hotkey_invalidations_fenced_total [1-9]/);
});

const badInputs: { name: string; run: (c: RawClient) => void; code: number; error?: string }[] = [
  {
    name: 'garbage bytes',
    run: (c) => c.sendRaw(new Uint8Array([0xc1, 0xff, 0x00, 0x13])),
    code: CloseCode.Protocol,
    error: 'HK_ERR_PROTOCOL',
  },
  { name: 'a text frame', run: (c) => c.sendRaw('{"t":1}'), code: CloseCode.Protocol, error: 'HK_ERR_PROTOCOL' },
  {
    name: 'a hub-only message type',
    run: (c) => c.sendRaw(pack({ t: MsgType.Promote, seq: 1, key: 'k' })),
    code: CloseCode.Protocol,
    error: 'HK_ERR_PROTOCOL',
  },
  {
    name: 'a Report before Hello',
    run: (c) => c.send({ t: MsgType.Report, keys: ['a'], counts: [1] }),
    code: CloseCode.Protocol,
    error: 'HK_ERR_PROTOCOL',
  },
  {
    name: 'a Hello with wrong field types',
    run: (c) => c.sendRaw(pack({ t: MsgType.Hello, v: '1', app: 'shop', instance: 'i', sdk: 'x' })),
    code: CloseCode.Protocol,
    error: 'HK_ERR_PROTOCOL',
  },
  {
    name: 'a wrong protocol version',
    run: (c) => c.send({ t: MsgType.Hello, v: 99, app: 'shop', token: 's3cret', instance: 'i', sdk: 'x' }),
    code: CloseCode.Version,
    error: 'HK_ERR_VERSION',
  },
  {
    name: 'an unknown app (answered like a bad token)',
    run: (c) => c.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'nope', instance: 'i', sdk: 'x' }),
    code: CloseCode.Auth,
    error: 'HK_ERR_AUTH',
  },
  {
    name: 'a wrong token',
    run: (c) =>
      c.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', token: 's3creT', instance: 'i', sdk: 'x' }),
    code: CloseCode.Auth,
    error: 'HK_ERR_AUTH',
  },
  {
    name: 'a missing token',
    run: (c) => c.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', instance: 'i', sdk: 'x' }),
    code: CloseCode.Auth,
    error: 'HK_ERR_AUTH',
  },
  {
    name: 'a dashboard hello',
    run: (c) =>
      c.send({
        t: MsgType.Hello,
        v: PROTOCOL_VERSION,
        app: 'shop',
        token: 's3cret',
        instance: 'i',
        sdk: 'x',
        role: 'dashboard',
      }),
    code: CloseCode.Protocol,
    error: 'HK_ERR_PROTOCOL',
  },
  {
    // a frame under MAX_FRAME_BYTES but far over the budget: cut off after its first reads, not
    // buffered whole and then decoded
    name: `more than preHelloBytes (${DEFAULT_TUNABLES.preHelloBytes}) before Hello`,
    run: (c) => c.sendRaw(new Uint8Array(MAX_FRAME_BYTES - 1)),
    code: CloseCode.FrameTooLarge,
    error: 'HK_ERR_FRAME_TOO_LARGE',
  },
  {
    name: 'a frame over MAX_FRAME_BYTES after Hello',
    run: (c) => {
      c.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', token: 's3cret', instance: 'big-1', sdk: 'x' });
      c.sendRaw(new Uint8Array(MAX_FRAME_BYTES + 1));
    },
    code: CloseCode.FrameTooLarge,
    error: 'HK_ERR_FRAME_TOO_LARGE',
  },
  {
    name: 'a frame over the ws limit after Hello',
    run: (c) => {
      c.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', token: 's3cret', instance: 'big-2', sdk: 'x' });
      c.sendRaw(new Uint8Array(4 * MAX_FRAME_BYTES + 1));
    },
    code: CloseCode.MessageTooBig,
  },
];

for (const bad of badInputs) {
  test(`${bad.name} gets ${bad.error ?? 'no Error frame'} and close ${bad.code}; a healthy connection keeps working`, async () => {
    const healthy = await join('shop', { token: 's3cret', instance: `healthy-${bad.code}` });
    const c = await connect();
    bad.run(c);
    const closed = await c.closeEvent(3000);
    assert.is(closed.code, bad.code);
    if (bad.error !== undefined) {
      const err = c.received.find((m) => m.t === MsgType.Error);
      assert.ok(err, 'an Error frame precedes the close');
      assert.is(err!.t === MsgType.Error && err!.code, bad.error);
    }
    healthy.client.send({ t: MsgType.Report, keys: ['item:h'], counts: [1] });
    await healthy.client.ping();
  });
}

test('an app at its connection limit refuses the next one with HK_ERR_OVER_CAPACITY and close 4009', async () => {
  const h = await startHubInProcess({ tunables: { maxSessionsPerApp: 2 } });
  try {
    const first = await RawClient.join(h.url, 'capped', { instance: 'one' });
    const second = await RawClient.join(h.url, 'capped', { instance: 'two' });
    const third = await RawClient.connect(h.url);
    const other = await RawClient.join(h.url, 'another-app', { instance: 'three' });
    e2e.peers.push(first.client, second.client, third, other.client);
    third.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'capped', instance: 'three', sdk: 'raw-test' });
    const closed = await third.closeEvent(5000);
    assert.is(closed.code, CloseCode.OverCapacity);
    const err = third.received.find((m) => m.t === MsgType.Error);
    assert.is(err?.t === MsgType.Error && err.code, 'HK_ERR_OVER_CAPACITY');
    await first.client.ping(); // the admitted ones and other apps are untouched
    await other.client.ping();
  } finally {
    await h.close();
  }
});

test('silence past the hello timeout gets HK_ERR_HELLO_TIMEOUT and close 4006; a healthy connection keeps working', async () => {
  // its own hub: a short hello timeout would race the large frames of the other cases on a busy box
  const h = await startHubInProcess({ tunables: { helloTimeoutMs: 300 } });
  try {
    const healthy = await RawClient.join(h.url, 'app', { instance: 'healthy' });
    // timed from before the connect: the hub's timer starts at its accept, which a busy box may
    // report to this client late
    const started = Date.now();
    const silent = await RawClient.connect(h.url);
    e2e.peers.push(healthy.client, silent);
    const closed = await silent.closeEvent(5000);
    assert.is(closed.code, CloseCode.HelloTimeout);
    assert.ok(Date.now() - started >= 250, 'not before the timeout');
    const err = silent.received.find((m) => m.t === MsgType.Error);
    assert.is(err?.t === MsgType.Error && err.code, 'HK_ERR_HELLO_TIMEOUT');
    await healthy.client.ping();
  } finally {
    await h.close();
  }
});

test('errors after Hello: long key, duplicate Hello, Applied from the future', async () => {
  const healthy = await join('shop', { token: 's3cret', instance: 'after-healthy' });
  const cases: [(c: RawClient) => void, number, string][] = [
    [
      (c) => c.sendRaw(pack({ t: MsgType.Report, keys: [`item:${'x'.repeat(MAX_KEY_LENGTH)}`], counts: [1] })),
      CloseCode.KeyTooLong,
      'HK_ERR_KEY_TOO_LONG',
    ],
    [
      (c) => c.sendRaw(pack({ t: MsgType.InvalidateRequest, id: 1, key: '' })),
      CloseCode.KeyTooLong,
      'HK_ERR_KEY_TOO_LONG',
    ],
    [
      (c) => c.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', token: 's3cret', instance: 'i', sdk: 'x' }),
      CloseCode.Protocol,
      'HK_ERR_PROTOCOL',
    ],
    [(c) => c.send({ t: MsgType.Applied, seq: 1_000_000 }), CloseCode.Protocol, 'HK_ERR_PROTOCOL'],
    [
      (c) => c.sendRaw(pack({ t: MsgType.Report, keys: ['a', 'b'], counts: [1] })),
      CloseCode.Protocol,
      'HK_ERR_PROTOCOL',
    ],
  ];
  for (const [run, code, error] of cases) {
    const { client } = await join('shop', { token: 's3cret' });
    run(client);
    const closed = await client.closeEvent();
    assert.is(closed.code, code);
    const err = client.received.find((m) => m.t === MsgType.Error);
    assert.is(err?.t === MsgType.Error && err.code, error);
    await healthy.client.ping();
  }
});

test('a slow consumer is cut off with 4008 instead of silently missing broadcasts', async () => {
  const slowHub = await startHubInProcess({
    config: { apps: { s: { rules: [{ match: '*', threshold: 1 }] } } },
    // one instance promotes thousands of keys alone here: lift the flood budgets, this is about sending
    tunables: { maxBufferedBytes: 1024 * 1024, soloPromotionBurst: 1e9, maxHotKeysPerApp: 1e9 },
  });
  try {
    const slow = await RawClient.join(slowHub.url, 's', { instance: 'slow' });
    const fast = await RawClient.join(slowHub.url, 's', { instance: 'fast' });
    e2e.peers.push(slow.client, fast.client);
    (slow.client.ws as WebSocket & { _socket: { pause(): void } })._socket.pause();
    const long = 'k'.repeat(1000);
    // batches of ~200 KB of Promotes; the reading client drains each before the next, the paused
    // one fills the kernel buffers and then the hub's send buffer
    for (let batch = 0; batch < 200 && slowHub.core.metrics.slowConsumers === 0; batch++) {
      const keys = Array.from({ length: 200 }, (_, i) => `${long}${batch}-${i}`);
      fast.client.send({ t: MsgType.Report, keys, counts: keys.map(() => 1) });
      await fast.client.next(MsgType.Promote, 5000, (m) => m.key === keys[199]);
    }
    assert.is(slowHub.core.metrics.slowConsumers, 1, 'only the paused socket was cut off');
    (slow.client.ws as WebSocket & { _socket: { resume(): void } })._socket.resume();
    const closed = await slow.client.closeEvent(10_000);
    assert.is(closed.code, CloseCode.SlowConsumer);
    assert.ok(slowHub.core.metrics.slowConsumers >= 1);
    await fast.client.ping();
  } finally {
    await slowHub.close();
  }
});

test('a peer that stops answering pings is dropped and leaves its app; live peers stay', async () => {
  const h = await startHubInProcess({ tunables: { pingIntervalMs: 100, configDebounceMs: 10 } });
  try {
    const live = await RawClient.join(h.url, 'app', { instance: 'live' });
    const dead = await RawClient.join(h.url, 'app', { instance: 'dead', autoPong: false });
    e2e.peers.push(live.client, dead.client);
    assert.is(dead.welcome.instances, 2);
    const closed = await dead.client.closeEvent(3000);
    assert.is(closed.code, 1006, 'terminated without a close frame');
    const cfg = await live.client.next(MsgType.Config, 3000, (c) => c.instances === 1);
    assert.is(cfg.instances, 1, 'the dead instance no longer counts');
    await live.client.ping();
  } finally {
    await h.close();
  }
});

test('graceful close sends 1001 to SDKs of a hub running alone', async () => {
  const h = await startHubInProcess();
  const { client } = await RawClient.join(h.url, 'any');
  e2e.peers.push(client);
  await h.close();
  const closed = await client.closeEvent();
  assert.is(closed.code, CloseCode.GoingAway);
});

test.run();
