/**
 * The hub's tunables reach the live dashboard feed on /live, not only the SDK endpoint: startHub
 * once built the feed without them, so `/live` kept its own 5 s Hello deadline and 8 MiB buffer
 * limit whatever the hub was told.
 */
import { once } from 'node:events';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import WebSocket from 'ws';
import type { Hub } from '@hotkey/hub';
import { CloseCode } from '@hotkey/sdk/protocol';
import { startHubInProcess } from '../support/e2e.ts';

let hub: Hub;

test.before(async () => {
  hub = await startHubInProcess({ tunables: { helloTimeoutMs: 200 } });
});
test.after(async () => {
  await hub.close();
});

test('a /live page that sends no Hello is closed after the hub’s helloTimeoutMs, not the feed’s 5 s default', async () => {
  const started = Date.now();
  const ws = new WebSocket(`ws://127.0.0.1:${hub.port}/live`);
  ws.on('error', () => {});
  const [code] = (await once(ws, 'close', { signal: AbortSignal.timeout(3000) })) as [number, Buffer];
  assert.is(code, CloseCode.HelloTimeout);
  assert.ok(Date.now() - started < 3000, `closed after ${Date.now() - started} ms`);
});

test.run();
