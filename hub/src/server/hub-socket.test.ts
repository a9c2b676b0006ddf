import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { once } from 'node:events';
import { WebSocket, WebSocketServer } from 'ws';
import { HubSocket } from './hub-socket.ts';
import { Broadcaster } from '../core/broadcast/broadcaster.ts';
import { decodeServerMessage, encode, MsgType } from '@hotkey/sdk/protocol';
import { waitFor, within } from '../../../test/support/wait.ts';

/** A server whose sockets are HubSockets, and one client connected to it. */
async function pair(): Promise<{ server: HubSocket; client: WebSocket; close(): Promise<void> }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, WebSocket: HubSocket });
  await once(wss, 'listening');
  const accepted = once(wss, 'connection');
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as { port: number }).port}`);
  const [server] = (await within('the connection', accepted, 5000)) as [HubSocket];
  await within('the client to open', once(client, 'open'), 5000);
  return {
    server,
    client,
    async close() {
      client.terminate();
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

test('sendBroadcast delivers the same bytes as send, in order, for every length encoding (7-bit, 16-bit, 64-bit)', async () => {
  const { server, client, close } = await pair();
  try {
    const got: Buffer[] = [];
    client.on('message', (data: Buffer) => got.push(data));
    const payloads = [0, 1, 125, 126, 65_535, 65_536, 200_000].map((n) =>
      Uint8Array.from({ length: n }, (_, i) => (i * 31 + n) & 0xff),
    );
    const frame = { payload: payloads[2]! };
    for (const p of payloads) {
      server.sendBroadcast({ payload: p });
      server.send(p); // interleaved with ws's own framing: order and boundaries must hold
    }
    server.sendBroadcast(frame);
    server.sendBroadcast(frame); // the cached wire form is reused
    await waitFor('every frame', () => got.length >= payloads.length * 2 + 2, 5000, 5);
    payloads.forEach((p, i) => {
      assert.equal(new Uint8Array(got[2 * i]!), p, `broadcast frame ${i} (${p.length} bytes)`);
      assert.equal(new Uint8Array(got[2 * i + 1]!), p, `plain frame ${i}`);
    });
    assert.ok(frame.payload.length > 0 && got.at(-1)!.equals(Buffer.from(frame.payload)));
  } finally {
    await close();
  }
});

test('sendBroadcast on a socket that is closing does not throw (falls back to send, as ws does)', async () => {
  const { server, close } = await pair();
  try {
    server.close(1000, 'bye');
    server.sendBroadcast({ payload: new Uint8Array([1, 2, 3]) });
    assert.is(server.readyState, WebSocket.CLOSING);
  } finally {
    await close();
  }
});

test('a burst of broadcasts in one event-loop turn is buffered from the second one on and arrives whole and in order when the turn ends', async () => {
  const { server, client, close } = await pair();
  try {
    const got: { t: number; seq?: number; key?: string }[] = [];
    client.on('message', (data: Buffer) => got.push(decodeServerMessage(data) as (typeof got)[number]));
    const broadcaster = new Broadcaster({ maxBufferedBytes: 1 << 20 });
    broadcaster.peers.add(server);
    const promote = (key: string) =>
      broadcaster.broadcast({ t: MsgType.Promote, key, qps: 100, hotMs: 1000, cacheTtlMs: 1000, cache: true, at: 0 });
    promote('first');
    assert.is(server.bufferedAmount, 0, 'the first broadcast of a turn is written at once');
    promote('second');
    broadcaster.sendTo(server, encode({ t: MsgType.Snapshot, seq: broadcaster.seq, hot: [] })); // a reply in between
    promote('third');
    assert.ok(server.bufferedAmount > 0, 'the rest of the burst waits for the end of the turn');
    await new Promise((r) => setImmediate(r));
    assert.is(server.bufferedAmount, 0, 'written once the turn ended');
    promote('next turn');
    assert.is(server.bufferedAmount, 0, 'a new turn starts a new burst: its first broadcast goes at once');
    await waitFor('the burst', () => got.length >= 5, 5000, 5);
    assert.equal(
      got.map((m) => m.key ?? `snapshot@${m.seq}`),
      ['first', 'second', 'snapshot@2', 'third', 'next turn'],
    );
    assert.equal(
      got.filter((m) => m.t === MsgType.Promote).map((m) => m.seq),
      [1, 2, 3, 4],
    );
  } finally {
    await close();
  }
});

test.run();
