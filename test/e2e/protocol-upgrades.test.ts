/**
 * Protocol versions across an upgrade: a hub of this code admits SDKs of the previous version (1:
 * no leases) and of the next (they offer a range), and an SDK of this code works with a hub one
 * version ahead. Version-1 frames are written here by hand, as a version-1 SDK sends them.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode, HotKeyClient, HotKeyError } from '@hotkey/sdk';
import { CloseCode, MsgType, OLDEST_CLIENT_VERSION, OLDEST_HUB_VERSION, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';
import { RawClient } from '../support/raw-client.ts';
import { hubInProcess } from '../support/e2e.ts';
import { ProtocolPeer } from '../support/protocol-peer.ts';
import { delay, waitFor } from '../support/wait.ts';

const LEASE_MS = 400;
const config = {
  apps: { shop: { rules: [{ match: 'item:*', threshold: 100, windowMs: 1000, hotMs: 30_000, cacheTtlMs: 5000 }] } },
};
const e2e = hubInProcess(
  test,
  { config, tunables: { helloTimeoutMs: 20_000, leaseMs: LEASE_MS, configDebounceMs: 20 } },
  { closePeersAfterEach: true },
);
const V1 = { v: 1 } as const;

test('a version-1 Hello is welcomed at version 1 and gets promotions with the current SDKs', async () => {
  assert.is(OLDEST_CLIENT_VERSION, 1, 'the versions before the current one are admitted, down to 1');
  const old = await e2e.join('shop', { ...V1, instance: 'p-old' });
  const cur = await e2e.join('shop', { instance: 'p-cur' });
  assert.is(old.welcome.v, 1, 'the Welcome says the version the session speaks');
  assert.is(cur.welcome.v, PROTOCOL_VERSION);
  old.client.send({ t: MsgType.Report, keys: ['item:u1'], counts: [60] });
  cur.client.send({ t: MsgType.Report, keys: ['item:u1'], counts: [40] });
  const po = await old.client.next(MsgType.Promote);
  const pc = await cur.client.next(MsgType.Promote);
  assert.is(po.key, 'item:u1');
  assert.equal(po, pc, 'the same broadcast');
});

test('a version-1 session that applies holds the ack until it does; no Grant, Lease refused', async () => {
  const w = await e2e.join('shop', { instance: 'a-w' });
  const old = await e2e.join('shop', { ...V1, instance: 'a-old' });
  w.client.send({ t: MsgType.InvalidateRequest, id: 1, key: 'item:a' });
  const inv = await w.client.next(MsgType.Invalidate);
  w.client.send({ t: MsgType.Applied, seq: inv.seq });
  const oi = await old.client.next(MsgType.Invalidate);
  // a version-2 session without a lease would not hold it up: this one has no lease to lapse
  await delay(LEASE_MS / 2);
  await w.client.ping();
  assert.not.ok(
    w.client.pending().some((m) => m.t === MsgType.Ack),
    'no ack while the version-1 session has not applied',
  );
  old.client.send({ t: MsgType.Applied, seq: oi.seq });
  const ack = await w.client.next(MsgType.Ack, 3000);
  assert.is(ack.id, 1);
  // a session an earlier test closed may still be waited out and named; this one applied
  assert.not.ok(ack.fenced.includes('a-old'), `fenced: ${ack.fenced}`);
  assert.not.ok(old.client.received.some((m) => m.t === MsgType.Grant));

  old.client.send({ t: MsgType.Lease, id: 1 });
  const closed = await old.client.closeEvent();
  assert.is(closed.code, CloseCode.Protocol, 'a Lease is not part of version 1');
});

test('a version-1 session that never applies is cut off after one lease and named fenced, never acked as applied', async () => {
  const w = await e2e.join('shop', { instance: 'f-w' });
  const old = await e2e.join('shop', { ...V1, instance: 'f-old' });
  const started = Date.now();
  w.client.send({ t: MsgType.InvalidateRequest, id: 2, key: 'item:f' });
  const inv = await w.client.next(MsgType.Invalidate);
  w.client.send({ t: MsgType.Applied, seq: inv.seq });
  await old.client.next(MsgType.Invalidate);
  const ack = await w.client.next(MsgType.Ack, 5000);
  assert.is(ack.id, 2);
  assert.ok(ack.fenced.includes('f-old'), `fenced: ${ack.fenced}`);
  assert.ok(Date.now() - started >= LEASE_MS - 50, 'waited one lease first');
  const closed = await old.client.closeEvent();
  assert.is(closed.code, CloseCode.SlowConsumer, 'cut off, so it reconnects and starts afresh');
  const error = old.client.received.find((m) => m.t === MsgType.Error);
  assert.is(error?.t === MsgType.Error ? error.code : undefined, ErrorCode.SlowConsumer);
});

test('a closed version-1 session holds the ack for one lease, then is named fenced', async () => {
  const w = await e2e.join('shop', { instance: 'c-w' });
  const old = await e2e.join('shop', { ...V1, instance: 'c-old' });
  old.client.close();
  await old.client.closeEvent();
  const t0 = Date.now();
  w.client.send({ t: MsgType.InvalidateRequest, id: 3, key: 'item:c' });
  const inv = await w.client.next(MsgType.Invalidate);
  w.client.send({ t: MsgType.Applied, seq: inv.seq });
  const ack = await w.client.next(MsgType.Ack, 5000);
  assert.ok(ack.fenced.includes('c-old'), `fenced: ${ack.fenced}`);
  assert.ok(Date.now() - t0 >= LEASE_MS - 150, 'a closed socket is no proof');
});

test('a Hello offering versions up to one ahead is welcomed at this hub version', async () => {
  const next = await e2e.join('shop', { v: PROTOCOL_VERSION + 1, vmin: PROTOCOL_VERSION, instance: 'n' });
  assert.is(next.welcome.v, PROTOCOL_VERSION);
});

test('versions out of range get HK_ERR_VERSION and 4001 naming the supported range', async () => {
  for (const hello of [
    { v: 0 },
    { v: PROTOCOL_VERSION + 1 },
    { v: PROTOCOL_VERSION + 2, vmin: PROTOCOL_VERSION + 1 },
  ]) {
    const c = await RawClient.connect(e2e.hub.url);
    c.send({ t: MsgType.Hello, ...hello, app: 'shop', instance: 'x', sdk: 'raw-test' });
    const closed = await c.closeEvent();
    assert.is(closed.code, CloseCode.Version, JSON.stringify(hello));
    const error = c.received.find((m) => m.t === MsgType.Error);
    assert.ok(error?.t === MsgType.Error, JSON.stringify(hello));
    if (error?.t !== MsgType.Error) continue;
    assert.is(error.code, ErrorCode.Version);
    assert.match(error.message, `this hub speaks versions ${OLDEST_CLIENT_VERSION} to ${PROTOCOL_VERSION}`);
  }
});

test('the SDK offers its range and works with a hub one version ahead', async () => {
  const peer = await new ProtocolPeer({ id: 'hub-next', versions: [PROTOCOL_VERSION, PROTOCOL_VERSION + 1] }).listen();
  const hk = new HotKeyClient({ app: 'shop', hubs: peer.url });
  try {
    const socketP = peer.nextSocket();
    await hk.ready({ signal: AbortSignal.timeout(3000) });
    const socket = await socketP;
    assert.is(socket.hello.v, PROTOCOL_VERSION);
    assert.is(socket.hello.vmin, OLDEST_HUB_VERSION, 'it speaks no version without leases');
    assert.is(OLDEST_HUB_VERSION, PROTOCOL_VERSION - 1, 'and still the previous one (version 2, without holders)');
    socket.send({ t: MsgType.Promote, seq: 1, key: 'k', qps: 1, hotMs: 30_000, cacheTtlMs: 5000, cache: true, at: 0 });
    await waitFor('k hot from the newer hub', () => hk.isHot('k'));
  } finally {
    await hk.close();
    await peer.close();
  }
});

test('the SDK stops for good on a Welcome of a version it does not speak, or a 4001', async () => {
  const far: { welcomeV?: number; versions?: [number, number] }[] = [
    { welcomeV: PROTOCOL_VERSION + 1 },
    { versions: [PROTOCOL_VERSION + 1, PROTOCOL_VERSION + 1] },
  ];
  for (const opts of far) {
    const peer = await new ProtocolPeer({ id: 'hub-far', ...opts }).listen();
    const hk = new HotKeyClient({ app: 'shop', hubs: peer.url, reconnectMinMs: 1, reconnectMaxMs: 2 });
    try {
      const err = await hk.ready({ signal: AbortSignal.timeout(3000) }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.instance(err, HotKeyError, JSON.stringify(opts));
      assert.is((err as HotKeyError).code, ErrorCode.Version);
      assert.match((err as HotKeyError).message, /version/);
      await delay(50); // many backoff periods (≤ 2 ms each)
      assert.is(peer.sockets.length, 1, 'no reconnect');
    } finally {
      await hk.close();
      await peer.close();
    }
  }
});

test.run();
