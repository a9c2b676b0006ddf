/**
 * TLS end to end, with a CA made for the test (test/support/tls-certs.ts): the hub serves HTTPS and
 * WSS on one port; an SDK that trusts the CA is welcomed and sees a promotion, one that does not
 * gets HK_ERR_TLS from ready(); the CLI takes --tls-cert/--tls-key (and env twins, and the config
 * file's `tls`) and refuses bad files with one line naming the flag; a cluster hub reaches Redis
 * over rediss:// (Debian's redis-server is built with TLS).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { get } from 'node:https';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCode, HotKeyClient, HotKeyError, type ClientStatus } from '@hotkey/sdk';
import type { Hub } from '@hotkey/hub';
import { RedisCoordinator } from '../../hub/src/cluster/redis-coordinator.ts';
import { HubProcess, runHubCli } from '../support/hub-process.ts';
import { RedisServer } from '../support/redis-server.ts';
import { makeTestPki, type TestPki } from '../support/tls-certs.ts';
import { waitFor, within } from '../support/wait.ts';
import { startHubInProcess } from '../support/e2e.ts';
import { loggerFromFunction } from '../../hub/src/core/logger.ts';

let pki: TestPki;
let hub: Hub;
const clients: HotKeyClient[] = [];
const config = { apps: { shop: { rules: [{ match: 'item:*', threshold: 20 }] } } };

test.before(async () => {
  pki = makeTestPki();
  hub = await startHubInProcess({
    config,
    tls: { cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey) },
    // every broadcast is offered to the fan-out threads, which must leave TLS sockets to the event loop
    tunables: { fanoutThreadsMinSockets: 1 },
  });
});
test.after(async () => {
  for (const c of clients) c.close();
  await hub?.close();
  pki?.remove();
});

function client(url: string, extra: Partial<ConstructorParameters<typeof HotKeyClient>[0]> = {}): HotKeyClient {
  const hk = new HotKeyClient({ app: 'shop', hubs: [url], reconnectMaxMs: 500, ...extra });
  clients.push(hk);
  return hk;
}

/** GET over https trusting `ca`; resolves with the status and body, rejects on a TLS failure. */
function httpsGet(url: string, ca: string | undefined): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get(url, { ca, timeout: 3000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

test('the hub serves HTTPS and WSS on one port', async () => {
  assert.ok(hub.tls);
  assert.match(hub.url, /^wss:\/\/127\.0\.0\.1:\d+\/ws$/);
  assert.match(hub.httpUrl, /^https:\/\/127\.0\.0\.1:\d+$/);
  const health = await httpsGet(`${hub.httpUrl}/healthz`, pki.ca);
  assert.is(health.status, 200);
  const untrusted = await httpsGet(`${hub.httpUrl}/healthz`, undefined).then(
    () => undefined,
    (err: Error) => err,
  );
  assert.match(String(untrusted), /self[- ]signed|unable to verify/i, 'not trusted without the CA');
});

test('an SDK that trusts the CA is welcomed over wss:// and sees a promotion', async () => {
  const logged: object[] = [];
  const sink = (obj: object) => void logged.push(obj);
  const hk = client(hub.url, { tls: { ca: pki.ca }, logger: { debug: sink, info: sink, warn: sink, error: sink } });
  await hk.ready({ signal: AbortSignal.timeout(5000) });
  for (let i = 0; i < 100; i++) hk.track('item:tls');
  await waitFor('item:tls hot at the SDK', () => hk.isHot('item:tls'), 4000);
  assert.is(hub.fanoutStats.byHelpers, 0, 'no raw write to a TLS socket');
  assert.ok(
    logged.some((o) => (o as { evt?: string }).evt === 'connect'),
    `the SDK logger heard the connect: ${JSON.stringify(logged)}`,
  );
});

test('localhost works too: the certificate names it', async () => {
  const hk = client(hub.url.replace('127.0.0.1', 'localhost'), { tls: { ca: pki.ca } });
  await hk.ready({ signal: AbortSignal.timeout(5000) });
});

test('without the CA, ready() rejects with HK_ERR_TLS and status() says why', async () => {
  const hk = client(hub.url);
  const statuses: ClientStatus[] = [];
  void (async () => {
    for await (const s of hk.status()) statuses.push(s);
  })();
  const err = await within(
    'ready() to reject',
    hk.ready().then(
      () => undefined,
      (e: unknown) => e,
    ),
    5000,
  );
  assert.instance(err, HotKeyError);
  assert.is((err as HotKeyError).code, ErrorCode.Tls);
  assert.match((err as Error).message, /TLS with wss:\/\/127\.0\.0\.1:\d+\/ws failed: .*tls\.ca/);
  await waitFor(
    'an error status',
    () => statuses.some((s) => s.type === 'error' && (s.error as HotKeyError).code === ErrorCode.Tls),
    2000,
  );
  assert.not.ok(statuses.some((s) => s.type === 'connect'));
});

test('tls options are checked at construction', () => {
  assert.throws(
    () => new HotKeyClient({ app: 'shop', hubs: [hub.url], tls: { cafile: 'x' } as never }),
    /options\.tls\.cafile is not a TLS option/,
  );
  assert.throws(
    () => new HotKeyClient({ app: 'shop', hubs: [hub.url], tls: { cert: 'x' } }),
    /cert and options\.tls\.key go together/,
  );
  assert.throws(
    () => new HotKeyClient({ app: 'shop', hubs: [hub.url], logger: { info() {} } as never }),
    /options\.logger must have/,
  );
});

test('a client certificate is presented when given (checked against a server that asks for one)', async () => {
  // the hub does not ask for client certificates; a TLS server that does stands in for a proxy
  const { createServer } = await import('node:https');
  const seen: string[] = [];
  const server = createServer(
    {
      cert: readFileSync(pki.serverCert),
      key: readFileSync(pki.serverKey),
      ca: pki.ca,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (_req, res) => res.end(),
  );
  server.on('upgrade', (req, socket) => {
    seen.push(String((req.socket as import('node:tls').TLSSocket).getPeerCertificate().subject?.CN ?? ''));
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  try {
    const hk = client(`wss://127.0.0.1:${port}/ws`, {
      tls: { ca: pki.ca, cert: readFileSync(pki.clientCert), key: readFileSync(pki.clientKey) },
    });
    await waitFor('the upgrade with a client certificate', () => seen.length > 0, 4000);
    assert.is(seen[0], 'hotkey-test-client');
    hk.close();
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('CLI: --tls-cert/--tls-key, their env twins and the config file serve wss:// and https://', async () => {
  const runs = [
    { args: ['--tls-cert', pki.serverCert, '--tls-key', pki.serverKey] },
    { env: { HOTKEY_TLS_CERT: pki.serverCert, HOTKEY_TLS_KEY: pki.serverKey } },
    (() => {
      // relative paths in the config file are from the file's folder
      const path = join(pki.dir, 'hub.json');
      writeFileSync(path, JSON.stringify({ ...config, tls: { cert: 'server.pem', key: 'server.key' } }));
      return { args: ['--config', path] };
    })(),
  ];
  // one after another, with a generous deadline: three hub processes at once crowd a shared 2-core box
  const hubs: HubProcess[] = [];
  for (const r of runs) hubs.push(await HubProcess.start({ ...r, readyTimeoutMs: 90_000 }));
  try {
    for (const h of hubs) {
      assert.match(h.url, /^wss:\/\//);
      assert.match(h.httpUrl, /^https:\/\//);
      assert.is((await httpsGet(`${h.httpUrl}/healthz`, pki.ca)).status, 200);
    }
    const hk = client(hubs[0]!.url, { tls: { ca: pki.ca } });
    await hk.ready({ signal: AbortSignal.timeout(5000) });
  } finally {
    await Promise.all(hubs.map((h) => h.stop()));
  }
});

test('CLI: a missing, unreadable or mismatched cert or key is one line naming the flag, exit 1', async () => {
  const garbage = join(pki.dir, 'garbage.pem');
  writeFileSync(garbage, 'not a certificate\n');
  const badConfig = join(pki.dir, 'bad-tls.json');
  writeFileSync(badConfig, JSON.stringify({ ...config, tls: { cert: 'nope.pem', key: 'server.key' } }));
  const cases: [string[], RegExp][] = [
    [
      ['--tls-cert', join(pki.dir, 'missing.pem'), '--tls-key', pki.serverKey],
      /^config error: --tls-cert: cannot read .*missing\.pem: ENOENT\n$/,
    ],
    [
      ['--tls-cert', pki.serverCert, '--tls-key', join(pki.dir, 'missing.key')],
      /^config error: --tls-key: cannot read .*missing\.key: ENOENT\n$/,
    ],
    [['--tls-cert', pki.serverCert, '--tls-key', pki.dir], /^config error: --tls-key: cannot read .*: EISDIR\n$/],
    [
      ['--tls-cert', pki.serverCert, '--tls-key', pki.otherKey],
      /^config error: --tls-key: does not match the certificate in --tls-cert/,
    ],
    [['--tls-cert', garbage, '--tls-key', pki.serverKey], /^config error: --tls-cert: not a PEM certificate/],
    [['--tls-cert', pki.serverCert, '--tls-key', garbage], /^config error: --tls-key: not a PEM private key/],
    [['--config', badConfig], /^config error: tls\.cert: cannot read .*nope\.pem: ENOENT\n$/],
  ];
  // two at a time: each run starts a Node process, and the box is shared
  const runs: Awaited<ReturnType<typeof runHubCli>>[] = [];
  for (let i = 0; i < cases.length; i += 2) {
    runs.push(
      ...(await Promise.all(
        cases.slice(i, i + 2).map(([args]) => runHubCli(['--port', '0', ...args], { timeoutMs: 90_000 })),
      )),
    );
  }
  runs.forEach((r, i) => {
    assert.is(r.code, 1, `${cases[i]![0].join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, cases[i]![1]);
    assert.is(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
  });
  const half = await runHubCli(['--port', '0', '--tls-cert', pki.serverCert], { timeoutMs: 30_000 });
  assert.is(half.code, 2, 'a certificate without a key is bad usage');
  assert.match(half.stderr, /--tls-cert needs --tls-key[\s\S]*usage: hotkey-hub/);
});

test('rediss://: a cluster hub reaches Redis over TLS with the CA', async () => {
  const redis = await RedisServer.start({
    args: (port) => [
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--tls-cert-file',
      pki.serverCert,
      '--tls-key-file',
      pki.serverKey,
      '--tls-ca-cert-file',
      pki.caCert,
      '--tls-auth-clients',
      'no',
    ],
  });
  const url = `rediss://127.0.0.1:${redis.port}`;
  const logs: string[] = [];
  const trusted = new RedisCoordinator({
    url,
    nodeId: 'tls-a',
    prefix: 'tls:',
    tls: { ca: pki.ca },
    startTimeoutMs: 3000,
    logger: loggerFromFunction((m) => logs.push(m)),
  });
  const untrusted = new RedisCoordinator({
    url,
    nodeId: 'tls-b',
    prefix: 'tls:',
    startTimeoutMs: 1000,
    logger: loggerFromFunction((m) => logs.push(m)),
  });
  let a: Hub | undefined;
  let b: Hub | undefined;
  try {
    a = await startHubInProcess({ coordinator: trusted });
    assert.is(trusted.health().state, 'ok', `joined over rediss:// (${logs.join(' | ')})`);
    assert.equal(
      trusted.members().members.map((m) => m.id),
      ['tls-a'],
    );
    b = await startHubInProcess({ coordinator: untrusted });
    assert.is(untrusted.health().state, 'degraded', 'without the CA the hub serves alone');
    assert.ok(logs.some((l) => l.includes('cannot reach Redis at rediss://127.0.0.1')));
  } finally {
    await a?.close();
    await b?.close();
    await redis.stop();
  }
});

test.run();
