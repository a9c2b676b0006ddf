// The load generators' WebSocket client against a real `ws` server on 127.0.0.1: if it framed,
// masked or parsed anything wrong, ws would refuse it or the bytes would differ.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { LeanClose, LeanWebSocket } from './lean-ws.ts';
import { waitFor, within } from '../support/wait.ts';

interface Peer {
  url: string;
  /** the server side of the next connection */
  next(): Promise<WebSocket>;
  stop(): Promise<void>;
}

async function wsServer(): Promise<Peer> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await within('ws server listening', once(wss, 'listening'), 5000);
  const port = (wss.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}/hub`,
    next: async () => (await within('server side of the connection', once(wss, 'connection'), 5000))[0] as WebSocket,
    stop: async () => {
      for (const c of wss.clients) c.terminate();
      await new Promise((r) => wss.close(r));
    },
  };
}

/** A client that keeps a copy of every message (the handed view is valid only during the callback). */
async function client(url: string) {
  const messages: Buffer[] = [];
  const closes: { code: number; reason: string }[] = [];
  const ws = await LeanWebSocket.connect(
    url,
    {
      onMessage: (data) => messages.push(Buffer.from(data)),
      onClose: (code, reason) => closes.push({ code, reason }),
    },
    { timeoutMs: 5000 },
  );
  return { ws, messages, closes };
}

/** An unmasked server frame, written by hand so the test decides how it is cut into writes. */
function serverFrame(opcode: number, payload: Buffer, fin = true): Buffer {
  const len = payload.length;
  const head = len < 126 ? Buffer.from([0, len]) : Buffer.from([0, 126, len >> 8, len & 0xff]);
  head[0] = (fin ? 0x80 : 0) | opcode;
  return Buffer.concat([head, payload]);
}

const rawSocket = (ws: WebSocket) => (ws as unknown as { _socket: Socket })._socket;
const bytes = (n: number, seed = 1) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff));

test('handshake, then binary both ways at every length encoding (7, 16 and 64 bit)', async () => {
  const peer = await wsServer();
  try {
    const serverSide = peer.next();
    const c = await client(peer.url);
    const server = await serverSide;
    assert.ok(c.ws.open);
    const received: Buffer[] = [];
    server.on('message', (data: Buffer, isBinary) => {
      assert.ok(isBinary, 'the client sends binary frames');
      received.push(data);
      server.send(data); // echoed: the server's frames at the same lengths
    });
    const sizes = [0, 1, 125, 126, 65_535, 65_536, 300_000];
    for (const [i, n] of sizes.entries()) c.ws.send(bytes(n, i));
    await waitFor('every echo back', () => c.messages.length === sizes.length, 5000);
    for (const [i, n] of sizes.entries()) {
      assert.equal(received[i], bytes(n, i), `server got the ${n}-byte payload unmasked intact`);
      assert.equal(c.messages[i], bytes(n, i), `client got the ${n}-byte payload intact`);
    }
    assert.equal(c.closes, []);
  } finally {
    await peer.stop();
  }
});

test('a frame cut into single bytes, one read each, is reassembled', async () => {
  const peer = await wsServer();
  try {
    const serverSide = peer.next();
    const c = await client(peer.url);
    const raw = rawSocket(await serverSide);
    raw.setNoDelay(true);
    // 16-bit length: the header itself is cut too
    const payload = bytes(200, 7);
    const frame = serverFrame(2, payload);
    for (const b of frame) {
      const reads = c.ws.readsIn;
      raw.write(Buffer.from([b]));
      await waitFor('the client to read the byte', () => c.ws.readsIn > reads, 5000, 1);
    }
    await waitFor('the message', () => c.messages.length === 1, 5000);
    assert.ok(c.ws.readsIn >= frame.length, `${c.ws.readsIn} reads for ${frame.length} bytes`);
    assert.equal(c.messages[0], payload);
  } finally {
    await peer.stop();
  }
});

test('a frame cut in two at every position, each part one read, is reassembled', async () => {
  const peer = await wsServer();
  try {
    const serverSide = peer.next();
    const c = await client(peer.url);
    const raw = rawSocket(await serverSide);
    raw.setNoDelay(true);
    const payload = bytes(130, 3);
    const frame = serverFrame(2, payload);
    for (let cut = 1; cut < frame.length; cut++) {
      for (const part of [frame.subarray(0, cut), frame.subarray(cut)]) {
        const reads = c.ws.readsIn;
        raw.write(part);
        await waitFor(`the client to read a part (cut at ${cut})`, () => c.ws.readsIn > reads, 5000, 1);
      }
    }
    await waitFor('every message', () => c.messages.length === frame.length - 1, 5000);
    for (const m of c.messages) assert.equal(m, payload);
  } finally {
    await peer.stop();
  }
});

test('many frames in one read are all delivered, in order', async () => {
  const peer = await wsServer();
  try {
    const serverSide = peer.next();
    const c = await client(peer.url);
    const raw = rawSocket(await serverSide);
    const frames = Array.from({ length: 200 }, (_, i) => serverFrame(2, bytes(i % 130, i)));
    const reads = c.ws.readsIn;
    raw.write(Buffer.concat(frames));
    await waitFor('200 messages', () => c.messages.length === 200, 5000);
    for (let i = 0; i < 200; i++) assert.equal(c.messages[i], bytes(i % 130, i));
    assert.ok(c.ws.readsIn - reads < 200, `${c.ws.readsIn - reads} reads carried 200 frames`);
  } finally {
    await peer.stop();
  }
});

test('a fragmented binary message arrives whole; a text frame closes with 1003', async () => {
  const peer = await wsServer();
  try {
    const serverSide = peer.next();
    const c = await client(peer.url);
    const server = await serverSide;
    server.send(bytes(10, 1), { binary: true, fin: false });
    server.send(bytes(300, 2), { binary: true, fin: true });
    await waitFor('the reassembled message', () => c.messages.length === 1, 5000);
    assert.equal(c.messages[0], Buffer.concat([bytes(10, 1), bytes(300, 2)]));
    const closed = once(server, 'close');
    server.send('text');
    const [code] = await within('the server to see the close', closed, 5000);
    assert.is(code, LeanClose.UnsupportedData);
    assert.is(c.closes[0]?.code, LeanClose.UnsupportedData);
    assert.not.ok(c.ws.open);
  } finally {
    await peer.stop();
  }
});

test('a ping is answered with a pong carrying the same payload', async () => {
  const peer = await wsServer();
  try {
    const serverSide = peer.next();
    await client(peer.url);
    const server = await serverSide;
    const pong = once(server, 'pong');
    server.ping(Buffer.from('heartbeat-7'));
    const [data] = await within('the pong', pong, 5000);
    assert.equal(data, Buffer.from('heartbeat-7'));
    const empty = once(server, 'pong');
    server.ping(); // what the hub's heartbeat sends
    assert.is(((await within('the empty pong', empty, 5000))[0] as Buffer).length, 0);
  } finally {
    await peer.stop();
  }
});

test('close from the server is echoed; close from the client reaches the server', async () => {
  const peer = await wsServer();
  try {
    let serverSide = peer.next();
    const a = await client(peer.url);
    let server = await serverSide;
    let closed = once(server, 'close');
    server.close(4004, 'bye');
    const [code, reason] = await within('the echoed close', closed, 5000);
    assert.is(code, 4004, 'the client echoes the status code');
    assert.is(String(reason), '');
    assert.equal(a.closes, [{ code: 4004, reason: 'bye' }]);
    assert.not.ok(a.ws.open);

    serverSide = peer.next();
    const b = await client(peer.url);
    server = await serverSide;
    closed = once(server, 'close');
    b.ws.close(1000, 'done');
    const [code2, reason2] = await within('the client close', closed, 5000);
    assert.is(code2, 1000);
    assert.is(String(reason2), 'done');
    b.ws.send(bytes(5)); // after close: dropped, no throw
    assert.equal(b.closes, [{ code: 1000, reason: 'done' }]);
  } finally {
    await peer.stop();
  }
});

/** An HTTP server that answers every upgrade with `head` (status line and headers). */
async function badServer(head: (key: string) => string): Promise<{ url: string; server: Server }> {
  const server = createServer();
  server.on('upgrade', (req, socket) => socket.end(`${head(String(req.headers['sec-websocket-key']))}\r\n\r\n`));
  server.listen(0, '127.0.0.1');
  await within('http server listening', once(server, 'listening'), 5000);
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}

test('a wrong Sec-WebSocket-Accept or a non-101 answer is refused', async () => {
  const wrong = await badServer(
    () =>
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=',
  );
  const refused = await badServer(() => 'HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0');
  try {
    const noop = { onMessage: () => undefined };
    await LeanWebSocket.connect(wrong.url, noop, { timeoutMs: 5000 }).then(
      () => assert.unreachable('a wrong accept value was taken'),
      (err: Error) => assert.match(err.message, /Sec-WebSocket-Accept/),
    );
    await LeanWebSocket.connect(refused.url, noop, { timeoutMs: 5000 }).then(
      () => assert.unreachable('a 503 was taken'),
      (err: Error) => assert.match(err.message, /503/),
    );
  } finally {
    wrong.server.close();
    refused.server.close();
  }
});

test.run();
