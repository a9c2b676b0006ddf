import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, Socket, type Socket as NetSocket } from 'node:net';
import { once } from 'node:events';
import { HubConnection, type ConnectionHandler } from './connection.ts';
import { HotKeyError } from '../errors.ts';
import { MsgType, PROTOCOL_VERSION, type Hello } from './protocol.ts';
import { ProtocolPeer } from '../../../test/support/protocol-peer.ts';
import { waitFor } from '../../../test/support/wait.ts';

const hello: Hello = { t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', instance: 'i', sdk: 'test' };

function recorder() {
  const log: string[] = [];
  const delays: number[] = [];
  const errors: Error[] = [];
  const handler: ConnectionHandler = {
    welcome: (c, w) => log.push(`welcome ${w.hub}`),
    message: (c, m) => log.push(`message ${m.t}`),
    down: (c, code) => log.push(`down ${code}`),
    reconnecting: (c, d) => delays.push(d),
    error: (c, e) => errors.push(e),
    fatal: (c, e) => log.push(`fatal ${e.code}`),
  };
  return { log, delays, errors, handler };
}

test('reconnect delays: capped exponential with full jitter, never under the floor', async () => {
  const server = createServer((s) => s.destroy()); // accepts TCP, never speaks WebSocket
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const r = recorder();
  const conn = new HubConnection(
    { url: `ws://127.0.0.1:${port}`, hello, backoffMinMs: 2, backoffMaxMs: 16, random: () => 0.999 },
    r.handler,
  );
  conn.start();
  await waitFor('r.delays.length >= 7', () => r.delays.length >= 7);
  conn.close();
  server.close();
  // ceilings 2, 4, 8, 16, 16 ... times 0.999, floored, at least 2
  assert.equal(r.delays.slice(0, 7), [2, 3, 7, 15, 15, 15, 15]);
  const low = recorder();
  const conn2 = new HubConnection(
    { url: `ws://127.0.0.1:${port}`, hello, backoffMinMs: 2, backoffMaxMs: 16, random: () => 0 },
    low.handler,
  );
  conn2.start();
  await waitFor('low.delays.length >= 3', () => low.delays.length >= 3);
  conn2.close();
  assert.equal(low.delays.slice(0, 3), [2, 2, 2]);
});

test('a hub that never completes the opening handshake: timed out by a timer of ours, no socket timeout set', async () => {
  const held = new Set<NetSocket>();
  const server = createServer((s) => held.add(s.on('error', () => {}))); // accepts TCP, never answers the upgrade
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  // what a test double of net.Socket in the application's process would see (sinon stubs setTimeout)
  const timeouts: number[] = [];
  const setTimeoutOf = Socket.prototype.setTimeout;
  Socket.prototype.setTimeout = function (this: NetSocket, ms: number, ...rest: unknown[]) {
    if (ms > 0) timeouts.push(ms);
    return (setTimeoutOf as (...a: unknown[]) => NetSocket).call(this, ms, ...rest);
  } as typeof setTimeoutOf;
  const r = recorder();
  const conn = new HubConnection(
    {
      url: `ws://127.0.0.1:${port}`,
      hello,
      livenessTimeoutMs: 60,
      pingIntervalMs: 20,
      backoffMinMs: 1000,
      backoffMaxMs: 1000,
    },
    r.handler,
  );
  try {
    conn.start();
    await waitFor('the handshake timed out', () => r.delays.length > 0, 3000);
    assert.equal(
      r.errors.map((e) => [(e as HotKeyError).code, e.message]),
      [['HK_ERR_TIMEOUT', `no connection to ws://127.0.0.1:${port} within 80 ms`]],
    );
    assert.equal(timeouts, []);
  } finally {
    Socket.prototype.setTimeout = setTimeoutOf;
    conn.close();
    for (const s of held) s.destroy();
    server.close();
  }
});

test('an unreadable frame from the hub: error reported, socket dropped, reconnect and welcome again', async () => {
  const peer = await new ProtocolPeer({ id: 'hub-a', snapshot: false }).listen();
  const r = recorder();
  const first = peer.nextSocket();
  const conn = new HubConnection({ url: peer.url, hello, backoffMinMs: 1, backoffMaxMs: 2 }, r.handler);
  conn.start();
  const sock = await first;
  await waitFor('a welcome from hub-a', () => r.log.includes('welcome hub-a'));
  const second = peer.nextSocket();
  sock.ws.send(Buffer.from([0xc1])); // never valid msgpack
  await second;
  await waitFor('a second welcome from hub-a', () => r.log.filter((l) => l === 'welcome hub-a').length === 2);
  assert.ok(r.errors.some((e) => e instanceof HotKeyError && e.code === 'HK_ERR_PROTOCOL'));
  assert.ok(r.log.includes('down 4000'));
  conn.close();
  await peer.close();
});

test('send before welcome is refused; close is final', async () => {
  const peer = await new ProtocolPeer({ id: 'hub-a' }).listen();
  const r = recorder();
  const conn = new HubConnection({ url: peer.url, hello }, r.handler);
  assert.not.ok(conn.send({ t: MsgType.Resync }));
  conn.start();
  await waitFor('conn.state === open', () => conn.state === 'open');
  assert.ok(conn.send({ t: MsgType.Resync }));
  await peer.sockets[0]!.next(MsgType.Resync);
  conn.close();
  assert.is(conn.state, 'closed');
  assert.not.ok(conn.send({ t: MsgType.Resync }));
  conn.start(); // no effect
  assert.is(conn.state, 'closed');
  await peer.close();
});

test('heartbeats: no ping while frames arrive within the period; a quiet connection pings rarely and allows more silence; a request ends quiet', async () => {
  const peer = await new ProtocolPeer({ id: 'hub-a' }).listen();
  const r = recorder();
  const socket = peer.nextSocket();
  const conn = new HubConnection(
    {
      url: peer.url,
      hello,
      pingIntervalMs: 200,
      quietPingIntervalMs: 2000,
      livenessTimeoutMs: 600,
      backoffMinMs: 5000,
    },
    r.handler,
  );
  conn.start();
  try {
    const sock = await socket;
    let pings = 0;
    sock.ws.on('ping', () => pings++);
    await waitFor('welcomed', () => r.log.includes('welcome hub-a'));
    // a frame every 10 ms, far more often than the 200 ms period: the frames prove the hub alive
    // (the margin is wide because a starved process runs its timers before the frames it missed)
    const chatter = setInterval(() => sock.send({ t: MsgType.Config, rules: [], local: [], instances: 1 }), 10);
    await new Promise((res) => setTimeout(res, 400));
    clearInterval(chatter);
    assert.is(pings, 0, 'no ping while the hub is heard');
    await waitFor('a ping once the hub went silent', () => pings > 0, 1000);

    // quiet: a hub that stops answering (pongs included) is not dropped after the 600 ms liveness
    conn.setQuiet(true);
    await new Promise((res) => setTimeout(res, 60)); // the pong of the last ping lands
    const before = pings;
    (sock.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    await new Promise((res) => setTimeout(res, 800));
    assert.not.ok(
      r.log.some((l) => l.startsWith('down')),
      'quiet: silence up to 2000 + 600 ms is allowed',
    );
    assert.is(pings, before, 'and no ping within the quiet period');
    // a request that wants an answer ends quiet: the hub must be heard within the liveness timeout
    conn.send({ t: MsgType.Lease, id: 1 });
    await waitFor(
      'dropped once the hub stayed silent 600 ms after the request',
      () => r.log.some((l) => l.startsWith('down')),
      3000,
    );
  } finally {
    conn.close();
    await peer.close();
  }
});

test.run();
