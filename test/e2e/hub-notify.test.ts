/**
 * Webhook notifications against real local receivers (node:http and node:https on 127.0.0.1): a
 * delivery carries the event as JSON with an HMAC-SHA256 signature of its body; `events` and
 * `apps` filter; `fenced` is an invalidation whose ack fenced an instance; https works with the
 * target's `ca` and fails without it; a receiver that hangs is cut off at `timeoutMs`, retried,
 * and its queue bound drops (counted) while promotions still reach the SDKs; one that answers 500
 * is retried then given up; an unreachable one likewise; a bad `notify` on reload is refused and
 * the old targets keep working. Targets change through `hub.reload` (one hub for the file).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { ErrorCode, ValidationError } from '@hotkey/sdk';
import { MsgType } from '@hotkey/sdk/protocol';
import type { Hub } from '@hotkey/hub';
import { startHubInProcess } from '../support/e2e.ts';
import { request, scrapeMetrics } from '../support/http.ts';
import { RawClient } from '../support/raw-client.ts';
import { makeTestPki, type TestPki } from '../support/tls-certs.ts';
import { waitFor } from '../support/wait.ts';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver: answers `status`, or never answers ('hang'). */
class Receiver {
  readonly received: Received[] = [];
  readonly #hanging: ServerResponse[] = [];
  constructor(
    readonly server: Server,
    readonly mode: number | 'hang',
    readonly scheme: 'http' | 'https',
  ) {
    server.on('request', (req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        this.received.push({ path: req.url ?? '', headers: req.headers, body });
        if (this.mode === 'hang') this.#hanging.push(res);
        else res.writeHead(this.mode, { 'content-type': 'text/plain' }).end('ok');
      });
    });
  }

  static async start(mode: number | 'hang', tls?: { cert: Buffer; key: Buffer }): Promise<Receiver> {
    const server = tls === undefined ? createServer() : createHttpsServer(tls);
    const r = new Receiver(server, mode, tls === undefined ? 'http' : 'https');
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receivers.push(r);
    return r;
  }

  get url(): string {
    return `${this.scheme}://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  json(i: number): Record<string, unknown> {
    return JSON.parse(this.received[i]!.body) as Record<string, unknown>;
  }
  close(): void {
    for (const res of this.#hanging) res.destroy();
    this.server.closeAllConnections();
    this.server.close();
  }
}

const receivers: Receiver[] = [];
const clients: RawClient[] = [];
const base = {
  apps: { shop: { rules: [{ match: 'item:*', threshold: 20 }] }, cart: {} },
  adminToken: 'adm',
};
let hub: Hub;
let pki: TestPki;

test.before(async () => {
  pki = makeTestPki();
  hub = await startHubInProcess({ config: base, tunables: { leaseMs: 400 } });
});
test.after.each(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const r of receivers.splice(0)) r.close();
  await hub.reload({ config: base });
});
test.after(async () => {
  await hub?.close();
  pki?.remove();
});

const notify = (targets: object[]) => hub.reload({ config: { ...base, notify: targets } });
const promote = async (app: string, key: string) => {
  const res = await request(`${hub.httpUrl}/api/apps/${app}/promote`, {
    method: 'POST',
    token: 'adm',
    body: JSON.stringify({ key }),
  });
  assert.is(res.status, 200, res.text);
};
const counters = async () => {
  const m = await scrapeMetrics(hub.httpUrl);
  return {
    sent: m.hotkey_notify_sent_total ?? NaN,
    failed: m.hotkey_notify_failed_total ?? NaN,
    dropped: m.hotkey_notify_dropped_total ?? NaN,
    retries: m.hotkey_notify_retries_total ?? NaN,
    queued: m.hotkey_notify_queued ?? NaN,
  };
};
const hmac = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

test('a promotion is POSTed as signed JSON; events and apps filter; a bad notify on reload is refused', async () => {
  const signed = await Receiver.start(200);
  const cartOnly = await Receiver.start(204);
  const { changed } = await notify([
    { url: `${signed.url}/hook?team=ops`, events: ['promote'], secret: 'shh' },
    { url: cartOnly.url, events: ['promote', 'invalidate'], apps: ['cart'] },
  ]);
  assert.ok(changed.includes('notify'));
  const before = await counters();

  await request(`${hub.httpUrl}/api/apps/shop/invalidate`, { method: 'POST', token: 'adm', body: '{"key":"item:a"}' });
  await promote('shop', 'item:a');
  await waitFor('the promotion at the receiver', () => signed.received.length >= 1);
  const got = signed.received[0]!;
  assert.is(got.path, '/hook?team=ops');
  assert.is(got.headers['content-type'], 'application/json');
  assert.is(got.headers['x-hotkey-event'], 'promote');
  assert.is(got.headers['x-hotkey-signature'], hmac('shh', got.body), 'HMAC-SHA256 of the raw body');
  assert.is.not(got.headers['x-hotkey-signature'], hmac('other', got.body));
  const body = signed.json(0);
  assert.is(body.type, 'promote', 'the invalidation before it was not subscribed');
  assert.is(body.app, 'shop');
  assert.is(body.key, 'item:a');
  assert.is(body.hub, hub.id);
  assert.is(body.manual, true);
  assert.is(got.headers['x-hotkey-delivery'], body.id);

  await promote('cart', 'c:1');
  await waitFor('the cart promotion at the cart-only receiver', () => cartOnly.received.length >= 1);
  assert.is(cartOnly.json(0).app, 'cart', 'the shop events never reached the cart-only target');
  assert.is(cartOnly.received[0]!.headers['x-hotkey-signature'], undefined, 'no secret: unsigned');
  await waitFor('both counted as sent', async () => (await counters()).sent - before.sent === 3);

  // a bad notify list is refused with its field, and the targets in force keep working
  const err = await notify([{ url: 'ftp://127.0.0.1/x', events: ['promote'] }]).catch((e: unknown) => e);
  assert.instance(err, ValidationError);
  assert.is((err as ValidationError).code, ErrorCode.Config);
  assert.is((err as ValidationError).field, 'notify[0].url');
  await promote('shop', 'item:b');
  await waitFor('a delivery after the refused reload', () => signed.received.length >= 3);
  assert.is(signed.json(2).key, 'item:b');
});

test('fenced: an invalidation whose ack fenced a silent instance', async () => {
  const r = await Receiver.start(200);
  await notify([{ url: r.url, events: ['fenced'] }]);
  // version 2: every invalidation is broadcast and waits for every leased session (a version-3 app
  // sends it to the key's holders only, and the silent one holds nothing); whether an earlier
  // test's sessions were still open decided which this test got
  const silent = await RawClient.join(hub.url, 'shop', { instance: 'to-s', v: 2 });
  const writer = await RawClient.join(hub.url, 'shop', { instance: 'to-w', v: 2 });
  clients.push(silent.client, writer.client);
  await request(`${hub.httpUrl}/api/apps/shop/invalidate`, { method: 'POST', token: 'adm', body: '{"key":"item:q"}' });
  silent.client.send({ t: MsgType.Lease, id: 1 });
  await silent.client.next(MsgType.Grant);
  writer.client.send({ t: MsgType.InvalidateRequest, id: 1, key: 'item:f' });
  const iw = await writer.client.next(MsgType.Invalidate);
  writer.client.send({ t: MsgType.Applied, seq: iw.seq });
  const ack = await writer.client.next(MsgType.Ack, 5000);
  assert.ok(ack.fenced.includes('to-s'));
  await waitFor('the fenced notification', () => r.received.length >= 1);
  const body = r.json(0);
  assert.is(body.type, 'fenced', 'the plain invalidation before it was not sent');
  assert.is(body.key, 'item:f');
  assert.ok((body.fenced as string[]).includes('to-s'));
});

test('https: delivered with the target ca, refused without it', async () => {
  const r = await Receiver.start(200, { cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey) });
  const before = await counters();
  await notify([
    { url: `${r.url}/with-ca`, events: ['promote'], ca: pki.caCert },
    { url: `${r.url}/no-ca`, events: ['promote'], retries: 0 },
  ]);
  await promote('shop', 'item:tls');
  await waitFor('the https delivery', () => r.received.length >= 1);
  await waitFor('the target without ca given up', async () => (await counters()).failed - before.failed === 1);
  assert.equal(
    r.received.map((x) => x.path),
    ['/with-ca'],
    'the target without the CA never completed a handshake',
  );
});

test('a receiver that hangs: each attempt cut off at timeoutMs, retried, the queue bound drops; detection unaffected', async () => {
  const r = await Receiver.start('hang');
  await notify([{ url: r.url, events: ['promote'], timeoutMs: 1000, retries: 1, maxQueue: 2 }]);
  const sdk = await RawClient.join(hub.url, 'shop');
  clients.push(sdk.client);
  const before = await counters();
  const keys = Array.from({ length: 8 }, (_, i) => `item:h${i}`);
  await Promise.all(keys.map((key) => promote('shop', key)));
  // an automatic promotion while the receiver hangs
  sdk.client.send({ t: MsgType.Report, keys: ['item:auto'], counts: [100] });
  for (const key of [...keys, 'item:auto']) await sdk.client.next(MsgType.Promote, 5000, (m) => m.key === key);
  const mid = await counters();
  const offered = 9;
  assert.ok(mid.queued >= 1 && mid.queued <= 3, `one in flight and at most maxQueue waiting: ${mid.queued}`);
  assert.is(mid.dropped - before.dropped + mid.queued + (mid.failed - before.failed), offered, 'every event accounted');
  assert.ok(mid.dropped - before.dropped >= 1, 'the bound dropped some');
  const after = await waitFor(
    'every queued event given up',
    async () => {
      const c = await counters();
      return c.queued === 0 ? c : undefined;
    },
    30_000,
  );
  const failed = after.failed - before.failed;
  assert.is(after.dropped - before.dropped + failed, offered);
  assert.is(after.sent - before.sent, 0);
  assert.is(after.retries - before.retries, failed, 'one retry each');
  assert.is(r.received.length, 2 * failed, 'two attempts for each given-up event');
  const attempts = new Map<string, number>();
  for (const x of r.received)
    attempts.set(
      x.headers['x-hotkey-delivery'] as string,
      (attempts.get(x.headers['x-hotkey-delivery'] as string) ?? 0) + 1,
    );
  assert.equal([...attempts.values()], Array(failed).fill(2), 'each delivery id tried twice, one at a time');
});

test('a receiver that answers 500 is retried then given up; 400 is given up at once; an unreachable one is retried', async () => {
  const failing = await Receiver.start(500);
  const refusing = await Receiver.start(400);
  const gone = await Receiver.start(200);
  const goneUrl = gone.url;
  gone.close();
  const before = await counters();
  await notify([
    { url: failing.url, events: ['promote'], retries: 2 },
    { url: refusing.url, events: ['promote'], retries: 2 },
    { url: goneUrl, events: ['promote'], retries: 1 },
  ]);
  await promote('shop', 'item:500');
  await waitFor('three given up', async () => (await counters()).failed - before.failed === 3, 15_000);
  const after = await counters();
  assert.is(failing.received.length, 3, 'the first attempt and two retries');
  assert.is(new Set(failing.received.map((x) => x.headers['x-hotkey-delivery'])).size, 1, 'one delivery id');
  assert.is(refusing.received.length, 1, 'a 4xx is not retried');
  assert.is(after.retries - before.retries, 3, '2 to the 500 receiver, 1 to the unreachable one');
  assert.is(after.sent - before.sent, 0);
});

test('startHub refuses a bad notify config naming the field', async () => {
  for (const [notifyList, field] of [
    [[{ url: 'http://127.0.0.1:1', events: ['promoted'] }], 'notify[0].events[0]'],
    [[{ url: 'http://127.0.0.1:1', events: 'promote' }], 'notify[0].events'],
    [[{ url: 'mailto:ops@example.com', events: ['promote'] }], 'notify[0].url'],
    [[{ url: 'http://127.0.0.1:1', events: ['promote'], retries: -1 }], 'notify[0].retries'],
  ] as const) {
    const err = await startHubInProcess({ config: { ...base, notify: notifyList } }).catch((e: unknown) => e);
    assert.instance(err, ValidationError);
    assert.is((err as ValidationError).field, field);
  }
});

test.run();
