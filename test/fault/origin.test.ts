/**
 * Cross-origin WebSockets (cross-site WebSocket hijacking). A page on another origin must not read the open
 * hub's live feed or join an app on /ws: browsers send Origin on every WebSocket handshake, so the
 * hub refuses origins that are not its own page's (for /live) or allow-listed (`--allow-origin`,
 * env HOTKEY_ALLOW_ORIGIN, config allowedOrigins) with HTTP 403 before the upgrade. Node SDKs send
 * no Origin and stay allowed. A raw ws client forging Origin stands in for the browser.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { once } from 'node:events';
import WebSocket from 'ws';
import { printFigures, readyMs } from '../support/attack.ts';
import { HubProcess } from '../support/hub-process.ts';
import { scrapeMetrics } from '../support/http.ts';
import { within } from '../support/wait.ts';

const ALLOWED = 'https://ops.example.com';
let hub: HubProcess;

test.before(async () => {
  hub = await HubProcess.start({ args: ['--allow-origin', ALLOWED] });
});

test.after(async () => {
  await hub?.stop('SIGKILL');
});

/** 'open', or the HTTP status that refused the handshake. */
async function handshake(path: string, origin: string | undefined): Promise<'open' | number> {
  const ws = new WebSocket(`ws://127.0.0.1:${hub.port}${path}`, { origin, perMessageDeflate: false });
  ws.on('error', () => {});
  try {
    return await within(
      `the ${path} handshake`,
      new Promise<'open' | number>((resolve) => {
        ws.once('open', () => resolve('open'));
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      }),
      5000,
    );
  } finally {
    ws.terminate();
  }
}

test('forged and foreign origins are refused with 403; the hub page, allow-listed origins and Node SDKs are not', async () => {
  const own = `http://127.0.0.1:${hub.port}`;
  const results = {
    wsEvil: await handshake('/ws', 'https://evil.example'),
    liveEvil: await handshake('/live', 'https://evil.example'),
    liveNullOrigin: await handshake('/live', 'null'),
    liveOtherPort: await handshake('/live', `http://127.0.0.1:${hub.port + 1}`),
    liveOwn: await handshake('/live', own),
    wsOwn: await handshake('/ws', own),
    wsAllowed: await handshake('/ws', ALLOWED),
    liveAllowed: await handshake('/live', `${ALLOWED}/`),
    wsNoOrigin: await handshake('/ws', undefined),
    sdkReadyMs: await readyMs(hub.url, 'shop'),
  };
  printFigures('origin', results);
  assert.is(results.wsEvil, 403, 'a foreign page cannot join an app');
  assert.is(results.liveEvil, 403, 'a foreign page cannot read the live feed');
  assert.is(results.liveNullOrigin, 403, 'a sandboxed page (Origin: null) neither');
  assert.is(results.liveOtherPort, 403, 'another port is another origin');
  assert.is(results.liveOwn, 'open', "the hub's own page reads its feed");
  assert.is(results.wsOwn, 403, "the SDK endpoint is not for the hub's page either");
  assert.is(results.wsAllowed, 'open');
  assert.is(results.liveAllowed, 'open', 'a trailing slash on the origin does not matter');
  assert.is(results.wsNoOrigin, 'open', 'no Origin: not a browser');
  assert.ok(results.sdkReadyMs < 5000, 'a Node SDK connects');
});

test('refused handshakes are counted on /metrics', async () => {
  const before = (await scrapeMetrics(hub.httpUrl)).hotkey_ws_origin_refused_total ?? 0;
  assert.is(await handshake('/ws', 'https://evil.example'), 403);
  assert.is(await handshake('/live', 'https://evil.example'), 403);
  const after = (await scrapeMetrics(hub.httpUrl)).hotkey_ws_origin_refused_total ?? 0;
  assert.is(after - before, 2);
});

test('the refusal names the error code in its body', async () => {
  const req = new WebSocket(`ws://127.0.0.1:${hub.port}/live`, { origin: 'https://evil.example' });
  req.on('error', () => {});
  const [, res] = (await once(req, 'unexpected-response', { signal: AbortSignal.timeout(5000) })) as [
    unknown,
    NodeJS.ReadableStream & { statusCode?: number },
  ];
  let body = '';
  for await (const chunk of res) body += String(chunk);
  assert.match(body, /HK_ERR_ORIGIN/);
  req.terminate();
});

test("HOTKEY_ALLOW_ORIGIN is the flag's environment twin", async () => {
  const other = await HubProcess.start({ env: { HOTKEY_ALLOW_ORIGIN: 'https://a.example, https://b.example' } });
  try {
    const at = (origin: string) => {
      const ws = new WebSocket(`ws://127.0.0.1:${other.port}/ws`, { origin });
      ws.on('error', () => {});
      return within(
        origin,
        new Promise<'open' | number>((resolve) => {
          ws.once('open', () => resolve('open'));
          ws.once('unexpected-response', (_q, r) => resolve(r.statusCode ?? 0));
        }),
        5000,
      ).finally(() => ws.terminate());
    };
    assert.is(await at('https://b.example'), 'open');
    assert.is(await at('https://c.example'), 403);
  } finally {
    await other.stop('SIGKILL');
  }
});

test.run();
