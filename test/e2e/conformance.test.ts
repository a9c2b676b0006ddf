/**
 * The conformance kit (`hotkey-hub conformance`, hub/src/conformance) against our own hub (a real hub
 * process) and our own SDK client, and against deliberately broken ones, which it must catch by
 * rule number: a hub that sends Snapshot before Welcome, a hub that skips a seq and acks at once,
 * a client that ignores a sequence gap.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import WebSocket, { WebSocketServer } from 'ws';
import { HotKeyClient } from '@hotkey/sdk';
import { closeCodeOf } from '@hotkey/sdk/errors';
import {
  decodeClientMessage,
  decodeServerMessage,
  encode,
  errorFrame,
  FATAL_CLOSE_CODES,
  MsgType,
  PROTOCOL_VERSION,
  type Message,
  type ServerMessage,
} from '@hotkey/sdk/protocol';
import { checkHub, startClientCheck, type Results } from '@hotkey/hub/conformance';
import { hubProcess } from '../support/e2e.ts';
import { waitFor, within } from '../support/wait.ts';

const HUB_BIN = fileURLToPath(new URL('../../hub/bin/hotkey-hub.js', import.meta.url));

interface KitRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the kit's CLI; `onLine` sees each stdout line as it comes (the client mode's URL). */
async function runKit(args: string[], onLine: (line: string) => void = () => {}, timeoutMs = 60_000): Promise<KitRun> {
  const child = spawn(process.execPath, [...process.execArgv, HUB_BIN, 'conformance', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let pending = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d;
    pending += d;
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) onLine(line);
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code] = (await once(child, 'close')) as [number | null];
  clearTimeout(timer);
  return { code, stdout, stderr };
}

const statusOf = (results: Results) => Object.fromEntries(results.list().map((r) => [r.id, r.status]));

// ---- our hub ----

const e2e = hubProcess(test, {
  args: ['--lease-ms', '1000'],
  config: { apps: { conformance: { token: 'c0nf' }, shop: {} } },
});

test('our hub breaks no rule: hotkey-hub conformance hub exits 0 with H1-H13 and H20-H23 all holding', async () => {
  const run = await runKit(['hub', e2e.hub.url, '--token', 'c0nf', '--json']);
  assert.is(run.code, 0, run.stdout + run.stderr);
  const report = JSON.parse(run.stdout) as {
    broken: boolean;
    rules: { id: string; status: string; details: string[] }[];
  };
  assert.is(report.broken, false);
  assert.equal(
    report.rules.map((r) => `${r.id} ${r.status}`),
    [...Array.from({ length: 13 }, (_, i) => `H${i + 1} ok`), 'H20 ok', 'H21 ok', 'H22 ok', 'H23 ok'],
  );
  assert.equal(report.rules.find((r) => r.id === 'H6')!.details, [], 'the wrong token was tried too');
});

// ---- our SDK ----

test('our SDK client breaks no rule: hotkey-hub conformance client exits 0 with C1-C8 all holding', async () => {
  const clients: HotKeyClient[] = [];
  try {
    const run = await runKit(['client', '--port', '0', '--wait-ms', '20000'], (line) => {
      const url = /^HOTKEY_CONFORMANCE_LISTENING (\S+)$/.exec(line)?.[1];
      if (url === undefined) return;
      const hk = new HotKeyClient({ app: 'shop', hubs: [url], reconnectMaxMs: 500 });
      hk.on('error', () => {}); // the kit sends a bad frame and refuses the last connection on purpose
      clients.push(hk);
    });
    assert.is(run.code, 0, run.stdout + run.stderr);
    assert.is(clients.length, 1);
    for (let i = 1; i <= 8; i++) assert.match(run.stdout, new RegExp(`^ok {3}C${i} `, 'm'));
    assert.match(run.stdout, /8 hold, 0 broken, 0 not checked/);
  } finally {
    await Promise.all(clients.map((hk) => hk.close()));
  }
});

// ---- broken hubs ----

type Answer = (ws: WebSocket, message: Message, state: { seq: number; peers: Set<WebSocket> }) => void;

/** A hub of the test's own making: decodes like ours, refuses like ours, answers as `answer` says. */
async function fakeHub(answer: Answer): Promise<{ url: string; close: () => Promise<void> }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await once(wss, 'listening');
  const state = { seq: 0, peers: new Set<WebSocket>() };
  wss.on('connection', (ws) => {
    ws.on('message', (data: Buffer, isBinary) => {
      try {
        if (!isBinary) throw new Error('text');
        answer(ws, decodeClientMessage(data), state);
      } catch (err) {
        ws.send(errorFrame(err));
        ws.close(closeCodeOf(err) ?? 4000, 'refused');
      }
    });
    ws.on('close', () => state.peers.delete(ws));
  });
  const port = (wss.address() as { port: number }).port;
  return {
    url: `ws://127.0.0.1:${port}/ws`,
    close: async () => {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

const send = (ws: WebSocket, m: ServerMessage) => ws.send(encode(m));
const welcome = (seq: number): ServerMessage => ({
  t: MsgType.Welcome,
  v: PROTOCOL_VERSION,
  hub: 'broken',
  epoch: 1,
  members: [{ id: 'broken', url: '' }],
  rules: [],
  local: [],
  instances: 1,
  seq,
});

test('a hub that sends its Snapshot before the Welcome: the kit exits 1 naming H1', async () => {
  const hub = await fakeHub((ws, m, state) => {
    if (m.t !== MsgType.Hello) return;
    send(ws, { t: MsgType.Snapshot, seq: state.seq, hot: [] });
    send(ws, welcome(state.seq));
  });
  try {
    const run = await runKit(['hub', hub.url, '--timeout-ms', '1000']);
    assert.is(run.code, 1, run.stdout + run.stderr);
    assert.match(run.stdout, /^FAIL H1 .*\n\s+a: the first frame after Hello is message type 7, not Welcome/m);
  } finally {
    await hub.close();
  }
});

test('a hub that skips a seq and acks an invalidation at once: H8, H11 and H12 broken, H7 and H10 hold', async () => {
  const hub = await fakeHub((ws, m, state) => {
    switch (m.t) {
      case MsgType.Hello:
        state.peers.add(ws);
        send(ws, { ...welcome(state.seq), v: Math.min(m.v, PROTOCOL_VERSION) } as ServerMessage);
        send(ws, { t: MsgType.Snapshot, seq: state.seq, hot: [] });
        return;
      case MsgType.Lease:
        send(ws, { t: MsgType.Grant, id: m.id, ms: 400 });
        return;
      case MsgType.InvalidateRequest: {
        state.seq += 2; // one number skipped
        for (const peer of state.peers) send(peer, { t: MsgType.Invalidate, seq: state.seq, key: m.key });
        send(ws, { t: MsgType.Ack, id: m.id, seq: state.seq, fenced: [], ms: 0 }); // nobody waited for
        return;
      }
      case MsgType.Resync:
        send(ws, { t: MsgType.Snapshot, seq: state.seq, hot: [] });
        return;
    }
  });
  try {
    const results = await checkHub(hub.url, { timeoutMs: 2000 });
    const status = statusOf(results);
    for (const rule of ['H8', 'H11', 'H12']) assert.is(status[rule], 'fail', results.format('broken hub'));
    for (const rule of ['H1', 'H2', 'H5', 'H7', 'H9', 'H10'])
      assert.is(status[rule], 'ok', results.format('broken hub'));
    const h8 = results.list().find((r) => r.id === 'H8')!;
    assert.match(h8.details[0]!, /a broadcast \(type 5\) with seq 2 after seq 0/);
  } finally {
    await hub.close();
  }
});

// ---- a broken client ----

test('a client that ignores a sequence gap: C5 broken, every other rule holds', async () => {
  const check = await startClientCheck({ timeoutMs: 2000, leaseMs: 1500 });
  let stopped = false;
  let connections = 0;
  // a client right in every way the kit checks but one: it never asks for a Resync
  const connect = () => {
    connections++;
    const ws = new WebSocket(check.url, { perMessageDeflate: false });
    let timer: ReturnType<typeof setInterval> | undefined;
    ws.on('open', () =>
      ws.send(encode({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', instance: 'gapless', sdk: 'test/1' })),
    );
    ws.on('message', (data: Buffer) => {
      let m: ServerMessage;
      try {
        m = decodeServerMessage(data);
      } catch (err) {
        ws.close(closeCodeOf(err) ?? 4000);
        return;
      }
      if (m.t === MsgType.Welcome) {
        let id = 0;
        ws.send(encode({ t: MsgType.Lease, id: ++id }));
        timer = setInterval(() => ws.send(encode({ t: MsgType.Lease, id: ++id })), 100);
      }
      if (m.t === MsgType.Invalidate) ws.send(encode({ t: MsgType.Applied, seq: m.seq }));
    });
    ws.on('error', () => {});
    ws.on('close', (code) => {
      clearInterval(timer);
      if (!stopped && !FATAL_CLOSE_CODES.has(code)) setTimeout(connect, 50);
    });
  };
  connect();
  try {
    const results = await within('the client check', check.done, 60_000);
    const status = statusOf(results);
    assert.is(status.C5, 'fail', results.format('broken client'));
    assert.match(results.list().find((r) => r.id === 'C5')!.details[0]!, /no Resync within 2000 ms/);
    for (const rule of ['C1', 'C2', 'C3', 'C4', 'C6', 'C7', 'C8'])
      assert.is(status[rule], 'ok', results.format('broken client'));
    await waitFor('the refused client to stay away', () => connections === 3, 1000);
  } finally {
    stopped = true;
    await check.close();
  }
});

// ---- usage ----

test('bad usage: the usage text and exit 2', async () => {
  for (const args of [
    ['--bogus'],
    [],
    ['hub'],
    ['hub', 'http://127.0.0.1:1'],
    ['hub', 'ws://127.0.0.1:1', '--port', '1'],
    ['client', '--port', 'x'],
    ['client', 'ws://127.0.0.1:1'],
    ['sideways'],
  ]) {
    const run = await runKit(args, () => {}, 20_000);
    assert.is(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stderr, /usage: hotkey-hub conformance hub <ws-url>/);
  }
  const help = await runKit(['--help'], () => {}, 20_000);
  assert.is(help.code, 0);
  assert.match(help.stdout, /Exit codes: 0 every checked rule holds, 1 a rule is broken, 2 bad usage/);
});

test.run();
