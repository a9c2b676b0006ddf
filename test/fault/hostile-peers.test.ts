/**
 * Many hostile peers at once — garbage bytes, text frames, oversized frames, wrong versions, bad
 * tokens, silent sockets, floods of distinct keys — while real SDKs of the same app work. The hub
 * must refuse each with its documented close code, stay healthy, and lose nothing for the others.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { once } from 'node:events';
import WebSocket from 'ws';
import { HotKeyClient } from '@hotkey/sdk';
import { CloseCode, encode, MAX_FRAME_BYTES, MsgType, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';
import { HubProcess, writeConfig } from '../support/hub-process.ts';
import { drive } from '../support/traffic.ts';
import { waitFor } from '../support/wait.ts';

const THRESHOLD = 200;
const config = { apps: { shop: { token: 'good-token', rules: [{ match: '*', threshold: THRESHOLD }] } } };
let hub: HubProcess;
const clients: HotKeyClient[] = [];

test.before(async () => {
  hub = await HubProcess.start({ args: ['--config', writeConfig(config, 'hotkey-hostile-')] });
});

test.after(async () => {
  await Promise.all(clients.map((hk) => hk.close()));
  await hub?.stop('SIGKILL');
});

const hello = (over: Record<string, unknown> = {}) =>
  encode({
    t: MsgType.Hello,
    v: PROTOCOL_VERSION,
    app: 'shop',
    token: 'good-token',
    instance: `x-${Math.random()}`,
    sdk: 'hostile',
    ...over,
  } as never);

/** Opens a socket, runs `attack`, and resolves with the close code the hub chose (deadline 15 s). */
async function attack(name: string, act: (ws: WebSocket) => void): Promise<{ name: string; code: number }> {
  const ws = new WebSocket(hub.url, { perMessageDeflate: false });
  ws.on('error', () => {});
  try {
    const closed = once(ws, 'close', { signal: AbortSignal.timeout(15_000) }) as Promise<[number, Buffer]>;
    await once(ws, 'open', { signal: AbortSignal.timeout(10_000) });
    act(ws);
    const [code] = await closed;
    return { name, code };
  } catch (err) {
    ws.terminate();
    throw new Error(`${name}: ${(err as Error).message}`);
  }
}

function floodOfKeys(n: number, offset: number): Uint8Array {
  const keys = Array.from({ length: n }, (_, i) => `flood:${offset + i}`);
  return encode({ t: MsgType.Report, keys, counts: keys.map(() => 1) });
}

test('hostile peers get their close codes while real SDKs keep detecting and invalidating', async () => {
  for (let i = 0; i < 3; i++) clients.push(new HotKeyClient({ app: 'shop', hubs: [hub.url], token: 'good-token' }));
  await Promise.all(clients.map((hk) => hk.ready({ signal: AbortSignal.timeout(5000) })));
  const driver = drive(clients, 'item:survivor', THRESHOLD * 3);

  const attacks: Promise<{ name: string; code: number }>[] = [];
  const expected: Record<string, number> = {};
  for (let round = 0; round < 5; round++) {
    const add = (name: string, code: number, act: (ws: WebSocket) => void) => {
      expected[`${name}#${round}`] = code;
      attacks.push(attack(`${name}#${round}`, act));
    };
    add('garbage', CloseCode.Protocol, (ws) => ws.send(Buffer.from([0xc1, 0xde, 0xad, 0xbe, 0xef])));
    add('text frame', CloseCode.Protocol, (ws) => ws.send('{"t":1}'));
    add('report before hello', CloseCode.Protocol, (ws) => ws.send(floodOfKeys(3, 0)));
    add('wrong version', CloseCode.Version, (ws) => ws.send(hello({ v: 999 })));
    add('bad token', CloseCode.Auth, (ws) => ws.send(hello({ token: 'nope' })));
    add('unknown app', CloseCode.Auth, (ws) => ws.send(hello({ app: 'ghost' })));
    add('oversized frame', CloseCode.FrameTooLarge, (ws) => {
      ws.send(hello());
      ws.send(Buffer.alloc(MAX_FRAME_BYTES + 10, 0x90));
    });
    add('key too long', CloseCode.KeyTooLong, (ws) => {
      ws.send(hello());
      ws.send(encode({ t: MsgType.Report, keys: ['k'.repeat(5000)], counts: [1] }));
    });
    add('wrong field type', CloseCode.Protocol, (ws) => {
      ws.send(hello());
      ws.send(encode({ t: MsgType.Report, keys: ['a'], counts: ['many'] } as never));
    });
    // a flood of distinct keys is legal input: it must be absorbed within bounds, then we leave
    add('key flood', CloseCode.Normal, (ws) => {
      ws.send(hello());
      for (let i = 0; i < 5; i++) ws.send(floodOfKeys(10_000, round * 50_000 + i * 10_000));
      setTimeout(() => ws.close(CloseCode.Normal), 300);
    });
  }

  const results = await Promise.all(attacks);
  for (const { name, code } of results) assert.is(code, expected[name], `${name} closed with ${code}`);

  try {
    await waitFor('item:survivor hot at every real SDK', () => clients.every((hk) => hk.isHot('item:survivor')), 6000);
    // on a loaded box the floods can stall the hub past an SDK's liveness timeout: it reconnects
    await waitFor('every real SDK connected', () => clients.every((hk) => hk.hubs().length === 1), 6000);
    let version = 1;
    const loader = async () => `v${version}`;
    for (const hk of clients) assert.is(await hk.get('item:survivor', loader), 'v1');
    version = 2;
    await clients[0]!.invalidate('item:survivor');
    for (const hk of clients) assert.is(await hk.get('item:survivor', loader), 'v2');
  } finally {
    driver.stop();
  }

  const health = await fetch(`${hub.httpUrl}/healthz`, { signal: AbortSignal.timeout(3000) });
  assert.is(health.status, 200);
  const metrics = await (await fetch(`${hub.httpUrl}/metrics`, { signal: AbortSignal.timeout(3000) })).text();
  const tracked = Number(/^hotkey_keys_tracked(?:\{[^}]*\})?\s+(\d+)/m.exec(metrics)?.[1] ?? NaN);
  assert.ok(Number.isFinite(tracked), 'metrics expose hotkey_keys_tracked');
  assert.ok(tracked <= 100_000, `keys tracked stay bounded: ${tracked}`);
  assert.is(hub.child.exitCode, null, 'the hub is still running');
});

test.run();
