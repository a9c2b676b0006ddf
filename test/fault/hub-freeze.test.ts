/**
 * A hub that stops answering without closing its sockets (SIGSTOP: a hung process, a GC pause
 * without end, a partition) — the case a socket close never reports. The SDK must notice through
 * ping/pong, keep answering reads, stop serving the hub's cached values once its lease from the
 * hub lapses (≤ the hub's 2 s leaseMs), stop treating its keys as hot after `maxStaleMs`, and
 * resynchronise when the hub comes back (SIGCONT).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HotKeyClient, HotKeyError, type ClientStatus } from '@hotkey/sdk';
import { HubProcess, writeConfig } from '../support/hub-process.ts';
import { drive } from '../support/traffic.ts';
import { waitFor } from '../support/wait.ts';

const THRESHOLD = 200;
const MAX_STALE_MS = 1500;
const LIVENESS_MS = 1000;
const LEASE_MS = 2000; // the hub's default leaseMs
const config = { apps: { shop: { rules: [{ match: '*', threshold: THRESHOLD, hotMs: 60_000, cacheTtlMs: 60_000 }] } } };

let hub: HubProcess;
let clients: HotKeyClient[] = [];

test.before(async () => {
  hub = await HubProcess.start({ args: ['--config', writeConfig(config, 'hotkey-freeze-')] });
});

test.after(async () => {
  await Promise.all(clients.map((hk) => hk.close()));
  if (hub) {
    hub.child.kill('SIGCONT');
    await hub.stop('SIGKILL');
  }
});

test('a frozen hub: noticed by ping, cached values served only while the lease lasts, then loader; resync on thaw', async () => {
  const opts = {
    app: 'shop',
    hubs: [hub.url],
    maxStaleMs: MAX_STALE_MS,
    pingIntervalMs: 250,
    livenessTimeoutMs: LIVENESS_MS,
    reconnectMaxMs: 300,
    invalidateTimeoutMs: 800,
  };
  clients = [new HotKeyClient(opts), new HotKeyClient(opts)];
  await Promise.all(clients.map((hk) => hk.ready({ signal: AbortSignal.timeout(5000) })));
  const [a, b] = clients as [HotKeyClient, HotKeyClient];

  const driver = drive(clients, 'item:frozen', THRESHOLD * 3);
  await waitFor('item:frozen hot', () => clients.every((hk) => hk.isHot('item:frozen')), 4000);
  driver.stop();
  let version = 1;
  const loader = async () => `v${version}`;
  assert.is(await a.get('item:frozen', loader), 'v1');
  assert.is(await b.get('item:frozen', loader), 'v1');
  version = 2; // the source of truth moves on; only an invalidation or the stale bound can tell the SDKs

  const statuses: ClientStatus[] = [];
  void (async () => {
    for await (const s of a.status()) statuses.push(s);
  })();

  hub.child.kill('SIGSTOP');
  const frozenAt = performance.now();
  await waitFor('a notices the frozen hub', () => statuses.some((s) => s.type === 'disconnect'), LIVENESS_MS + 3000);
  const noticedMs = performance.now() - frozenAt;
  assert.ok(noticedMs <= LIVENESS_MS + 2500, `noticed after ${noticedMs} ms`);

  // reads never wait on the frozen hub; the cached value is served only while the lease lasts:
  // asked every 500 ms for 2 s, it ends 1.4–1.9 s after the freeze
  await waitFor(
    'a falls back to the loader',
    async () => (await a.get('item:frozen', loader)) === 'v2',
    LEASE_MS + 3000,
  );
  const fellBackMs = performance.now() - frozenAt;
  assert.ok(fellBackMs >= LEASE_MS * 0.6, `cached values were dropped too early (${fellBackMs} ms)`);
  assert.ok(fellBackMs <= LEASE_MS + 1000, `cached values were served past the lease (${fellBackMs} ms)`);
  await waitFor(
    'the key is no longer hot past maxStaleMs',
    () => !a.isHot('item:frozen'),
    LIVENESS_MS + MAX_STALE_MS + 3000,
  );

  // a write while the owner is unreachable: the local copy goes, the caller learns it was not broadcast
  const err = await b.invalidate('item:frozen').then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.instance(err, HotKeyError);
  assert.ok(['HK_ERR_UNAVAILABLE', 'HK_ERR_TIMEOUT'].includes((err as HotKeyError).code), (err as HotKeyError).code);
  assert.is(await b.get('item:frozen', loader), 'v2');

  hub.child.kill('SIGCONT');
  await waitFor(
    'a reconnects',
    () => statuses.some((s, i) => s.type === 'connect' && statuses.findIndex((d) => d.type === 'disconnect') < i),
    8000,
  );
  const again = drive(clients, 'item:frozen', THRESHOLD * 3);
  try {
    // the thawed hub still believes the key is hot; SDKs resync from its snapshot or re-promotion
    await waitFor('item:frozen hot again everywhere', () => clients.every((hk) => hk.isHot('item:frozen')), 5000);
    assert.is(await a.get('item:frozen', loader), 'v2', 'after resync no value from before the freeze is served');
  } finally {
    again.stop();
  }
});

test.run();
