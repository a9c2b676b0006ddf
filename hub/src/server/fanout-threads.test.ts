import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { WebSocket, WebSocketServer } from 'ws';
import { Broadcaster } from '../core/broadcast/broadcaster.ts';
import { FanoutThreads } from './fanout-threads.ts';
import { HubSocket } from './hub-socket.ts';
import { waitFor } from '../../../test/support/wait.ts';

/** `count` clients of a HubSocket server; each client's received messages in order */
async function fleet(count: number) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, WebSocket: HubSocket });
  await once(wss, 'listening');
  const servers: HubSocket[] = [];
  wss.on('connection', (ws: HubSocket) => servers.push(ws));
  const url = `ws://127.0.0.1:${(wss.address() as { port: number }).port}`;
  const clients = await Promise.all(
    Array.from({ length: count }, async () => {
      const ws = new WebSocket(url, { perMessageDeflate: false });
      const got: Buffer[] = [];
      ws.on('message', (data: Buffer) => got.push(data));
      await once(ws, 'open', { signal: AbortSignal.timeout(5000) });
      return { ws, got };
    }),
  );
  await waitFor('every connection accepted', () => servers.length === count, 5000);
  return {
    servers,
    clients,
    async close() {
      for (const c of clients) c.ws.terminate();
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** payload `i` of `size` bytes: its index in the first 4, then a pattern that depends on it */
function payload(i: number, size: number): Uint8Array {
  const out = new Uint8Array(size);
  new DataView(out.buffer).setUint32(0, i);
  for (let k = 4; k < size; k++) out[k] = (k * 7 + i) & 0xff;
  return out;
}

const threads = Math.min(2, availableParallelism() - 1);

test('helper threads write a broadcast to their share of the sockets: every client gets every frame, whole and in order, replies in between included', async () => {
  const f = await fleet(40);
  const pool = new FanoutThreads({ threads: 2, minSockets: 8 });
  try {
    await pool.start();
    assert.ok(threads >= 1, 'this test needs 2 CPUs');
    assert.is(pool.threads, threads);
    const broadcaster = new Broadcaster({ maxBufferedBytes: 8 << 20, bulk: pool });
    for (const s of f.servers) broadcaster.peers.add(s);
    const sent: Uint8Array[] = [];
    for (let i = 0; i < 30; i++) {
      const p = payload(i, 20 + i * 97); // 20 B to ~2.9 KB: 7- and 16-bit lengths
      sent.push(p);
      broadcaster.sendBroadcast(p);
      await new Promise((r) => setImmediate(r)); // one per turn: a burst in one turn is corked instead
      if (i % 10 === 3) {
        // a reply to one peer between two fan-outs keeps its place
        const reply = payload(1000 + i, 11);
        broadcaster.sendTo(f.servers[5]!, reply);
      }
    }
    assert.ok(
      pool.stats.byHelpers >= 30 * 10,
      `the helpers wrote their share of every broadcast (${pool.stats.byHelpers})`,
    );
    const total = () => f.clients.reduce((n, c) => n + c.got.length, 0);
    await waitFor('every frame at every client, and the three replies', () => total() >= 40 * 30 + 3, 10_000);
    assert.is(total(), 40 * 30 + 3);
    assert.is(f.clients.filter((c) => c.got.length === 33).length, 1, 'one client got the replies');
    for (const c of f.clients) {
      const ids = c.got.map((b) => new DataView(b.buffer, b.byteOffset).getUint32(0));
      const broadcasts = c.got.filter((_, k) => ids[k]! < 1000);
      assert.is(broadcasts.length, 30);
      broadcasts.forEach((b, i) => assert.ok(b.equals(Buffer.from(sent[i]!)), `frame ${i} intact`));
      if (c.got.length === 33) {
        // the reply after broadcast 3 comes right after it, and so on
        assert.equal(
          ids.filter((id) => id >= 1000),
          [1003, 1013, 1023],
        );
        assert.is(ids.indexOf(1003), 4);
        assert.is(ids.indexOf(1013), 15);
      }
    }
  } finally {
    await pool.close();
    await f.close();
  }
});

test('a socket whose kernel buffer fills mid-frame gets the rest from the event loop: nothing lost, nothing twice, order kept', async () => {
  const f = await fleet(12);
  const pool = new FanoutThreads({ threads: 2, minSockets: 4 });
  try {
    await pool.start();
    const broadcaster = new Broadcaster({ maxBufferedBytes: 256 << 20, bulk: pool });
    for (const s of f.servers) broadcaster.peers.add(s);
    // every client stops reading: the kernel buffers fill, and writes come back short or EAGAIN
    for (const c of f.clients) (c.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const sent: Uint8Array[] = [];
    for (let i = 0; i < 400 && pool.stats.finishedByLoop === 0; i++) {
      const p = payload(i, 60_000);
      sent.push(p);
      broadcaster.sendBroadcast(p);
      await new Promise((r) => setImmediate(r)); // one broadcast per turn: a burst would be corked, not handed over
    }
    assert.ok(pool.stats.finishedByLoop > 0, 'some helper write came back short');
    // and more after it: those sockets now have a queue, so the event loop writes them
    for (let k = 0; k < 5; k++) {
      const p = payload(sent.length, 60_000);
      sent.push(p);
      broadcaster.sendBroadcast(p);
    }
    for (const c of f.clients) (c.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await waitFor('every frame at every client', () => f.clients.every((c) => c.got.length >= sent.length), 20_000);
    for (const c of f.clients) {
      assert.is(c.got.length, sent.length);
      c.got.forEach((b, i) => {
        if (!b.equals(Buffer.from(sent[i]!))) assert.unreachable(`frame ${i} differs`);
      });
    }
  } finally {
    await pool.close();
    await f.close();
  }
});

test('small fan-outs, frames over 64 KiB, a fan-out begun inside another and a closed pool stay on the event loop', async () => {
  const f = await fleet(6);
  const pool = new FanoutThreads({ threads: 2, minSockets: 10 });
  try {
    const broadcaster = new Broadcaster({ maxBufferedBytes: 8 << 20, bulk: pool });
    for (const s of f.servers) broadcaster.peers.add(s);
    broadcaster.sendBroadcast(payload(0, 100)); // 6 sockets < minSockets
    const big = new FanoutThreads({ threads: 2, minSockets: 1 });
    await big.start();
    const wide = new Broadcaster({ maxBufferedBytes: 8 << 20, bulk: big });
    for (const s of f.servers) wide.peers.add(s);
    wide.sendBroadcast(payload(1, 70_000)); // over the broadcast frame buffer
    assert.equal(big.stats, { byHelpers: 0, finishedByLoop: 0 });
    // a fan-out begun while another is open (re-entered from a write callback) is left to the caller
    const open = big.begin({ payload: payload(9, 10) }, f.servers);
    assert.is(big.begin({ payload: payload(9, 10) }, f.servers).length, f.servers.length);
    for (const peer of open) (peer as HubSocket).sendBroadcast({ payload: payload(9, 10) });
    big.end();
    assert.ok(big.stats.byHelpers > 0, 'the outer fan-out went through the helpers');
    await big.close();
    wide.sendBroadcast(payload(2, 100)); // closed: no helpers
    assert.equal(pool.stats, { byHelpers: 0, finishedByLoop: 0 });
    await waitFor('all four frames', () => f.clients.every((c) => c.got.length === 4), 5000);
    for (const c of f.clients)
      assert.equal(
        c.got.map((b) => new DataView(b.buffer, b.byteOffset).getUint32(0)),
        [0, 1, 9, 2],
      );
  } finally {
    await pool.close();
    await f.close();
  }
});

test.run();
