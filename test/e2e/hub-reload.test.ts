/**
 * Live config reload of the real `hotkey-hub` process: SIGHUP re-reads the config file (and the TLS
 * files). A changed app token, admin token and rule apply to new connections; a bad file is refused
 * with the field named and the hub keeps serving with the old config; a rotated certificate is what
 * the next handshake sees while a connection opened before stays up; SIGHUP without a config file
 * is harmless (before this handler existed, SIGHUP terminated the process).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import { CloseCode, MsgType, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';
import { HubProcess, writeConfig } from '../support/hub-process.ts';
import { request } from '../support/http.ts';
import { RawClient } from '../support/raw-client.ts';
import { makeTestPki, type TestPki } from '../support/tls-certs.ts';
import { waitFor, within } from '../support/wait.ts';

/** Sends SIGHUP and waits for the `n`-th line of event `evt` on the hub's stdout. */
async function hup(hub: HubProcess, evt: string): Promise<Record<string, unknown>> {
  const count = () => lines(hub, evt).length;
  const before = count();
  hub.child.kill('SIGHUP');
  await waitFor(`a ${evt} log line after SIGHUP`, () => count() > before, 10_000);
  return lines(hub, evt).at(-1)!;
}

function lines(hub: HubProcess, evt: string): Record<string, unknown>[] {
  return hub.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.evt === evt);
}

/** A Hello with `token`: resolves 'welcome' or the close code. */
async function hello(url: string, token: string): Promise<'welcome' | number> {
  const c = await RawClient.connect(url);
  try {
    c.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', token, instance: 'i-reload', sdk: 'raw-test' });
    const outcome = await Promise.race([
      c.next(MsgType.Welcome, 5000).then(() => 'welcome' as const),
      c.closed.then((closed) => closed.code),
    ]);
    return outcome;
  } finally {
    c.close();
  }
}

test('SIGHUP applies new tokens and rules to new connections; a bad file is refused and the old config stays', async () => {
  const path = writeConfig({
    apps: { shop: { token: 'one', rules: [{ match: 'item:*', threshold: 50 }] } },
    adminToken: 'admin-one',
    dashboardToken: 'dash-one',
  });
  const hub = await HubProcess.start({ args: ['--config', path] });
  try {
    assert.is(await hello(hub.url, 'one'), 'welcome');
    const before = await RawClient.join(hub.url, 'shop', { token: 'one' });

    writeFileSync(
      path,
      JSON.stringify({
        apps: { shop: { token: 'two', rules: [{ match: 'item:*', threshold: 70 }] }, cart: {} },
        adminToken: 'admin-two',
        dashboardToken: 'dash-two',
      }),
    );
    const reloaded = await hup(hub, 'config_reloaded');
    assert.equal(reloaded.changed, ['apps', 'adminToken', 'dashboardToken']);
    assert.is(await hello(hub.url, 'one'), CloseCode.Auth, 'the old token is refused for new connections');
    assert.is(await hello(hub.url, 'two'), 'welcome', 'the new token is accepted');
    assert.is((await request(`${hub.httpUrl}/api/apps`, { token: 'dash-one' })).status, 403, 'old dashboard token');
    const rules = await request(`${hub.httpUrl}/api/apps/shop/rules`, { token: 'dash-two' });
    assert.is(rules.body.rules[0].threshold, 70, 'the file changed the rules');
    const write = (token: string) =>
      request(`${hub.httpUrl}/api/apps/shop/rules`, { method: 'PUT', token, body: JSON.stringify(rules.body.rules) });
    assert.is((await write('admin-one')).status, 403, 'the old admin token is refused');
    assert.is((await write('admin-two')).status, 200, 'the new admin token is accepted');
    assert.is((await before.client.ping()).t, MsgType.Snapshot, 'a session opened before the reload stays');

    // a bad file: refused with the field named, nothing changes
    writeFileSync(
      path,
      JSON.stringify({ apps: { shop: { token: 'three', rules: [{ match: 'item:*', threshold: 0 }] } } }),
    );
    const refused = await hup(hub, 'config_refused');
    assert.is(refused.field, 'apps.shop.rules[0].threshold');
    assert.match(String(refused.reason), /threshold/);
    writeFileSync(path, '{ not json');
    assert.is((await hup(hub, 'config_refused')).field, 'config');
    assert.is(await hello(hub.url, 'three'), CloseCode.Auth, 'the refused file did not apply');
    assert.is(await hello(hub.url, 'two'), 'welcome', 'the old config keeps serving');
    assert.is((await request(`${hub.httpUrl}/healthz`)).status, 200);
    assert.is(hub.child.exitCode, null, 'the hub is still running');
    before.client.close();
  } finally {
    await hub.stop();
  }
});

test('SIGHUP without a config file is harmless', async () => {
  const hub = await HubProcess.start();
  try {
    const line = await hup(hub, 'config_reloaded');
    assert.equal(line.changed, []);
    assert.is(hub.child.exitCode, null);
    assert.is(await hello(hub.url, 'any'), 'welcome', 'open mode still welcomes any app');
  } finally {
    const exit = await hub.stop();
    assert.is(exit.code, 0, 'still a graceful exit');
  }
});

test('--watch-config: an edit of the file reloads it without a signal; an edit that breaks it is refused', async () => {
  const path = writeConfig({ apps: { shop: { token: 'one' } } });
  const hub = await HubProcess.start({ args: ['--config', path, '--watch-config'] });
  const count = (evt: string) => lines(hub, evt).length;
  try {
    assert.is(await hello(hub.url, 'one'), 'welcome');
    writeFileSync(path, JSON.stringify({ apps: { shop: { token: 'two' } } }));
    await waitFor('a reload after the edit', () => count('config_reloaded') === 1, 10_000);
    assert.is(await hello(hub.url, 'two'), 'welcome');
    assert.is(await hello(hub.url, 'one'), CloseCode.Auth);
    writeFileSync(path, JSON.stringify({ apps: { shop: { token: 'three', extra: 1 } } }));
    await waitFor('the broken edit refused', () => count('config_refused') === 1, 10_000);
    assert.is(lines(hub, 'config_refused')[0]!.field, 'apps.shop.extra');
    assert.is(await hello(hub.url, 'two'), 'welcome', 'the last good config stays');
  } finally {
    await hub.stop();
  }
});

let pki: TestPki;
let pki2: TestPki;
test.before(() => {
  pki = makeTestPki();
  pki2 = makeTestPki(); // another CA, so the new certificate differs in issuer and serial
});
test.after(() => {
  pki?.remove();
  pki2?.remove();
});

function handshake(port: number, ca: string[]): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => resolve(socket));
    socket.once('error', reject);
  });
}

test('SIGHUP rotates the TLS pair: new handshakes get the new certificate, an open connection stays', async () => {
  const dir = dirname(writeConfig({ apps: { shop: {} } }));
  const cert = join(dir, 'hub.pem');
  const key = join(dir, 'hub-key.pem');
  copyFileSync(pki.serverCert, cert);
  copyFileSync(pki.serverKey, key);
  const path = join(dir, 'hub.json');
  writeFileSync(path, JSON.stringify({ apps: { shop: {} }, tls: { cert: 'hub.pem', key: 'hub-key.pem' } }));
  const hub = await HubProcess.start({ args: ['--config', path] });
  const cas = [pki.ca, pki2.ca];
  const fingerprint = (file: string) => new X509Certificate(readFileSync(file)).fingerprint256;
  try {
    const old = await handshake(hub.port, cas);
    assert.is(old.getPeerX509Certificate()?.fingerprint256, fingerprint(pki.serverCert));
    const sdk = await RawClient.join(hub.url.replace('ws://', 'wss://'), 'shop').catch(() => undefined);
    assert.is(sdk, undefined, 'a wss client without the CA is refused (sanity: the port serves TLS)');

    assert.equal((await hup(hub, 'config_reloaded')).changed, [], 'the same files: nothing changed');

    // a key that does not match: refused, the old pair stays
    copyFileSync(pki2.serverCert, cert);
    const refused = await hup(hub, 'config_refused');
    assert.is(refused.field, 'tls.key');
    const still = await handshake(hub.port, cas);
    assert.is(still.getPeerX509Certificate()?.fingerprint256, fingerprint(pki.serverCert));
    still.destroy();

    copyFileSync(pki2.serverKey, key);
    const reloaded = await hup(hub, 'config_reloaded');
    assert.ok((reloaded.changed as string[]).includes('tls'));
    const fresh = await handshake(hub.port, cas);
    assert.is(fresh.getPeerX509Certificate()?.fingerprint256, fingerprint(pki2.serverCert), 'the new certificate');
    fresh.destroy();
    // the connection from before the rotation still carries requests
    old.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    let answer = '';
    old.on('data', (d) => (answer += d));
    await within('the old connection to answer', new Promise((resolve) => old.once('end', resolve)), 5000);
    assert.match(answer, /^HTTP\/1\.1 200/);
  } finally {
    await hub.stop();
  }
});

test.run();
