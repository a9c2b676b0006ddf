import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CloseCode, MsgType, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';
import { HubProcess, runHubCli } from '../support/hub-process.ts';
import { RawClient } from '../support/raw-client.ts';
import { waitFor } from '../support/wait.ts';
import { OPTIONS } from '../../hub/src/cli-flags.ts';

const dir = mkdtempSync(join(tmpdir(), 'hotkey-cli-'));
function configFile(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}
test.after(() => rmSync(dir, { recursive: true, force: true }));

/** A port free on 127.0.0.1 right now (the OS picks it; the hub binds it a moment later). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test('open mode: ready line, OPEN notice, SDK session, SIGTERM closes SDKs with 1001 and exits 0', async () => {
  const hub = await HubProcess.start();
  try {
    assert.match(hub.url, /^ws:\/\/127\.0\.0\.1:\d+\/ws$/);
    assert.ok(hub.port > 0);
    assert.match(hub.stdout, /listening on ws:\/\/127\.0\.0\.1/);
    assert.match(hub.stdout, /dashboard http:\/\/127\.0\.0\.1:\d+\//);
    assert.match(hub.stdout, /OPEN/);
    const { client, welcome } = await RawClient.join(hub.url, 'anything');
    assert.is(welcome.hub, hub.id);
    client.send({ t: MsgType.Report, keys: ['k'], counts: [1000] });
    assert.is((await client.next(MsgType.Promote)).key, 'k', 'default rule: 1000 per second');
    const health = await fetch(`${hub.httpUrl}/healthz`, { signal: AbortSignal.timeout(3000) });
    assert.is(health.status, 200);
    const exit = await hub.stop('SIGTERM');
    assert.is(exit.code, 0);
    assert.is((await client.closeEvent()).code, CloseCode.GoingAway);
  } finally {
    await hub.stop('SIGKILL');
  }
});

test('config file: tokens and rules apply, flags and env are honoured', async () => {
  const path = configFile('good.json', {
    apps: { shop: { token: 's3cret', rules: [{ match: 'item:*', threshold: 3 }] } },
    adminToken: 'adm',
  });
  const hub = await HubProcess.start({
    args: ['--config', path, '--node-id', 'hub-cli-1'],
    env: { HOTKEY_DASHBOARD_TOKEN: 'dash' },
  });
  try {
    assert.is(hub.id, 'hub-cli-1');
    assert.not.match(hub.stdout, /OPEN/);
    assert.not.match(hub.stdout + hub.stderr, /s3cret|adm\b|dash\b/, 'tokens are never printed');
    const { welcome } = await RawClient.join(hub.url, 'shop', { token: 's3cret' }).then((j) => (j.client.close(), j));
    assert.is(welcome.rules[0]!.threshold, 3);
    const refused = await RawClient.connect(hub.url);
    refused.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'other', instance: 'i', sdk: 'x' });
    assert.is((await refused.closeEvent()).code, CloseCode.Auth, 'an unknown app is refused like a bad token');
    const noToken = await fetch(`${hub.httpUrl}/api/hot`, { signal: AbortSignal.timeout(3000) });
    assert.is(noToken.status, 401, 'HOTKEY_DASHBOARD_TOKEN applies');
    const put = await fetch(`${hub.httpUrl}/api/apps/shop/rules`, {
      method: 'PUT',
      headers: { authorization: 'Bearer adm' },
      body: '[{"match":"x","threshold":1}]',
      signal: AbortSignal.timeout(3000),
    });
    assert.is(put.status, 200, 'adminToken from the config file');
  } finally {
    await hub.stop();
  }
});

test('a bad config file exits 1 naming the field', async () => {
  const cases: [unknown, RegExp][] = [
    [
      { apps: { shop: { token: 's', rules: [{ match: 'item:*', threshold: 0 }] } } },
      /config error: apps\.shop\.rules\[0\]\.threshold: must be/,
    ],
    [{ apps: {}, colour: 'red' }, /config error: colour: unknown field/],
    [{ apps: { shop: { tokn: 'x' } } }, /config error: apps\.shop\.tokn: unknown field/],
    [{ apps: { shop: { token: '' } } }, /config error: apps\.shop\.token: must be a non-empty string/],
    [{ apps: [] }, /config error: apps: must be an object/],
    ['{ not json', /config error: config: .* is not valid JSON/],
  ];
  // in parallel: each run pays tsx start-up
  const runs = await Promise.all(
    cases.map(([content], i) =>
      runHubCli(['--port', '0', '--config', configFile(`bad${i}.json`, content)], { timeoutMs: 30_000 }),
    ),
  );
  runs.forEach((r, i) => {
    assert.is(r.code, 1, `case ${i}: ${r.stderr}`);
    assert.match(r.stderr, cases[i]![1]);
  });
  const missing = await runHubCli(['--port', '0', '--config', join(dir, 'missing.json')]);
  assert.is(missing.code, 1);
  assert.match(missing.stderr, /config error: config: cannot read/);
});

test('a low open-file limit is warned about at start (it caps the connections below maxSessionsPerApp)', async () => {
  const hub = await HubProcess.start({ fdLimit: 512 });
  try {
    // 512 descriptors leave 384 connections, fewer than the default 20000 SDKs per app
    assert.match(hub.stdout, /"level":"warn"[^\n]*"evt":"connection_cap","maxConnections":384/);
  } finally {
    await hub.stop();
  }
});

test('--max-sessions-per-app caps the connections of one app', async () => {
  const hub = await HubProcess.start({ args: ['--max-sessions-per-app', '2'] });
  const clients: RawClient[] = [];
  try {
    assert.not.match(hub.stdout, /connection_cap/);
    for (let i = 0; i < 2; i++) clients.push((await RawClient.join(hub.url, 'capped', { instance: `i${i}` })).client);
    const third = await RawClient.connect(hub.url);
    clients.push(third);
    third.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'capped', instance: 'i2', sdk: 'test', role: 'sdk' });
    assert.is((await third.closeEvent()).code, CloseCode.OverCapacity);
  } finally {
    for (const c of clients) c.close();
    await hub.stop();
  }
});

test('bad usage exits 2 with the usage text', async () => {
  const argsList = [
    ['--bogus'],
    ['--port', 'abc'],
    ['--port', '70000'],
    ['--advertise-url', 'http://x'],
    ['--redis', 'nope'],
    ['--lease-ms', '0'],
    ['--max-sessions-per-app', '0'],
    ['--max-keys-per-app', '0'],
    ['--max-connections', 'many'],
    ['--fanout-threads', '-1'],
    ['--fanout-threads', '1.5'],
    ['--log-level', 'verbose'],
    ['--tls-key', 'k.pem'],
  ];
  const runs = await Promise.all(argsList.map((args) => runHubCli(args, { timeoutMs: 60_000 })));
  runs.forEach((r, i) => {
    assert.is(r.code, 2, `${argsList[i]!.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /usage: hotkey-hub/);
  });
  const env = await runHubCli([], { env: { HOTKEY_PORT: 'x' } });
  assert.is(env.code, 2, 'env values are validated like flags');
  const level = await runHubCli([], { env: { HOTKEY_LOG_LEVEL: 'loud' } });
  assert.is(level.code, 2);
  assert.match(level.stderr, /--log-level must be one of error, warn, info, debug, got "loud"/);
  const help = await runHubCli(['--help']);
  assert.is(help.code, 0);
  assert.match(help.stdout, /--config FILE/);
  for (const flag of Object.keys(OPTIONS)) {
    const named = help.stdout.split('\n').filter((l) => l.startsWith(`  --${flag} `) || l === `  --${flag}`);
    assert.is(named.length, 1, `--help names --${flag} once: ${JSON.stringify(named)}`);
  }
  const wide = help.stdout.split('\n').filter((l) => l.length > 108);
  assert.equal(wide, [], 'no line of the usage text is wider than 108 columns');
});

test('a first `--` is skipped (pnpm hands it on); a second still ends the options', async () => {
  const [leading, afterFlag, second, unknown] = await Promise.all([
    runHubCli(['--', '--port', '0', '--help']),
    runHubCli(['--log-pretty', '--', '--port', '0', '--help']),
    runHubCli(['--', '--port', '0', '--', '--help'], { timeoutMs: 60_000 }),
    runHubCli(['--', '--bogus'], { timeoutMs: 60_000 }),
  ]);
  for (const r of [leading, afterFlag]) {
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, /usage: hotkey-hub/, 'the flags after `--` were read');
  }
  assert.is(second.code, 2, second.stderr);
  assert.match(second.stderr, /Unexpected argument '--help'/);
  assert.is(unknown.code, 2);
  assert.match(unknown.stderr, /Unknown option '--bogus'/, 'a flag after `--` is checked like any other');
  const valued = await runHubCli(['--admin-token', '--', '--port', '0'], { timeoutMs: 60_000 });
  assert.is(valued.code, 2, 'a `--` where a value belongs is not skipped');
  assert.match(valued.stderr, /--admin-token' argument is ambiguous/);
});

test('`pnpm start -- --port N` and `pnpm demo -- --port N` listen on N (the demo running)', async () => {
  const repo = fileURLToPath(new URL('../..', import.meta.url));
  // the bin loads the hub from its sources, as under this runner, not from a dist/ that may be stale
  const env = { NODE_OPTIONS: '--conditions=@hotkey/source --import tsx' };
  const ports = await Promise.all([freePort(), freePort()]);
  const hubs = await Promise.allSettled(
    (['start', 'demo'] as const).map((script, i) =>
      HubProcess.start({
        command: ['pnpm', '--silent', script, '--'],
        args: ['--port', String(ports[i])],
        cwd: repo,
        env,
        dropEnv: /^(NODE_OPTIONS$|npm_)/,
        group: true,
        readyTimeoutMs: 90_000,
      }),
    ),
  );
  try {
    const [start, demo] = hubs.map((h) => {
      if (h.status === 'rejected') throw h.reason;
      return h.value;
    });
    assert.is(start!.port, ports[0]);
    assert.is(demo!.port, ports[1]);
    await waitFor(
      'the demo instances joined',
      async () => {
        const res = await fetch(`${demo!.httpUrl}/api/instances?app=shop`, { signal: AbortSignal.timeout(3000) });
        return res.ok && JSON.stringify(await res.json()).includes('demo-shop-1');
      },
      30_000,
    );
    const plain = await fetch(`${start!.httpUrl}/api/instances?app=shop`, { signal: AbortSignal.timeout(3000) });
    assert.not.match(JSON.stringify(await plain.json()), /demo-shop/, '`pnpm start` runs no demo');
  } finally {
    await Promise.all(hubs.map((h) => (h.status === 'fulfilled' ? h.value.stop() : undefined)));
  }
});

/** stdout as log events: every line but HOTKEY_READY must be one JSON object. */
function events(stdout: string): Record<string, any>[] {
  return stdout
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('HOTKEY_READY '))
    .map((line) => {
      try {
        return JSON.parse(line);
      } catch {
        throw new Error(`not a JSON log line: ${JSON.stringify(line)}`);
      }
    });
}

test('logs: JSON lines, one event with fields per promotion, refusal (with its close code), rule change and admin write', async () => {
  const path = configFile('logs.json', {
    apps: { shop: { token: 's3cret', rules: [{ match: 'item:*', threshold: 3 }] } },
    adminToken: 'adm',
  });
  const [hub, quiet] = await Promise.all([
    HubProcess.start({ args: ['--config', path], readyTimeoutMs: 90_000 }),
    HubProcess.start({ args: ['--config', path], env: { HOTKEY_LOG_LEVEL: 'warn' }, readyTimeoutMs: 90_000 }),
  ]);
  try {
    for (const h of [hub, quiet]) {
      const { client } = await RawClient.join(h.url, 'shop', { token: 's3cret', instance: 'inst-1' });
      client.send({ t: MsgType.Report, keys: ['item:7'], counts: [10] });
      assert.is((await client.next(MsgType.Promote)).key, 'item:7');
      client.close();
      // an app not in the config is answered like a bad token (no app enumeration); only a name
      // no hub accepts gets HK_ERR_UNKNOWN_APP
      const unknown = await RawClient.connect(h.url);
      unknown.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'other', instance: 'i', sdk: 'x' });
      assert.is((await unknown.closeEvent()).code, CloseCode.Auth);
      const invalid = await RawClient.connect(h.url);
      invalid.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'sh\u0001op', instance: 'i', sdk: 'x' });
      assert.is((await invalid.closeEvent()).code, CloseCode.UnknownApp);
      const wrong = await RawClient.connect(h.url);
      wrong.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', token: 'nope', instance: 'i', sdk: 'x' });
      assert.is((await wrong.closeEvent()).code, CloseCode.Auth);
    }
    const put = await fetch(`${hub.httpUrl}/api/apps/shop/rules`, {
      method: 'PUT',
      headers: { authorization: 'Bearer adm' },
      body: '[{"match":"x:*","threshold":7}]',
      signal: AbortSignal.timeout(3000),
    });
    assert.is(put.status, 200);
    const denied = await fetch(`${hub.httpUrl}/api/apps/shop/invalidate`, {
      method: 'POST',
      body: '{"key":"item:7"}',
      signal: AbortSignal.timeout(3000),
    });
    assert.is(denied.status, 401);

    const find = (evt: string, pred: (e: Record<string, any>) => boolean = () => true) =>
      events(hub.stdout).find((e) => e.evt === evt && pred(e));
    await waitFor(
      'the rule change and the refused write logged',
      () => find('rules') !== undefined && find('api_write', (e) => e.status === 401) !== undefined,
      5000,
    );
    const promote = find('promote')!;
    assert.ok(promote, hub.stdout);
    assert.is(promote.level, 'info');
    assert.is(promote.app, 'shop');
    assert.is(promote.key, 'item:7');
    assert.ok(promote.qps > 0 && promote.threshold === 3, JSON.stringify(promote));
    assert.type(promote.time, 'string');
    const refusedApp = find('refused', (e) => e.close === CloseCode.UnknownApp)!;
    assert.is(refusedApp.code, 'HK_ERR_UNKNOWN_APP', JSON.stringify(refusedApp));
    assert.is(refusedApp.level, 'warn');
    const refusedAuth = find('refused', (e) => e.close === CloseCode.Auth)!;
    assert.is(refusedAuth.code, 'HK_ERR_AUTH');
    assert.is(refusedAuth.app, undefined, 'a refused hello is not counted as the app');
    assert.equal(find('rules')!.matches, ['x:*']);
    const write = find('api_write', (e) => e.method === 'PUT')!;
    assert.equal([write.path, write.app, write.status, write.rules], ['/api/apps/shop/rules', 'shop', 200, 1]);
    assert.is(
      find('api_write', (e) => e.status === 401)!.key,
      undefined,
      'a refused write is logged before its body is read',
    );
    assert.ok(find('listening'), 'start-up is an event too');
    assert.not.match(hub.stdout, /s3cret|Bearer|"adm"/, 'tokens are never logged');

    await waitFor(
      'the quiet hub logged the refusals',
      () => events(quiet.stdout).filter((e) => e.evt === 'refused').length >= 2,
      5000,
    );
    const quietEvents = events(quiet.stdout);
    assert.not.ok(
      quietEvents.some((e) => e.evt === 'promote'),
      'HOTKEY_LOG_LEVEL=warn drops info events',
    );
    assert.ok(
      quietEvents.every((e) => e.level === 'warn' || e.level === 'error'),
      quiet.stdout,
    );
  } finally {
    await Promise.all([hub.stop(), quiet.stop()]);
  }
});

test('--log-pretty: one human line per event', async () => {
  const hub = await HubProcess.start({ args: ['--log-pretty'], readyTimeoutMs: 90_000 });
  try {
    assert.match(
      hub.stdout,
      /^\d\d:\d\d:\d\d\.\d{3} INFO {2}listening: hotkey hub \S+ listening on ws:\/\/127\.0\.0\.1:\d+\/ws/m,
    );
    assert.match(hub.stdout, /^\d\d:\d\d:\d\d\.\d{3} WARN {2}open_mode: running OPEN/m);
  } finally {
    await hub.stop();
  }
});

test('a busy port fails start-up with exit 1', async () => {
  const hub = await HubProcess.start();
  try {
    const r = await runHubCli(['--port', String(hub.port)], { timeoutMs: 60_000 });
    assert.is(r.code, 1);
    assert.match(r.stderr, /EADDRINUSE/);
  } finally {
    await hub.stop();
  }
});

test.run();
