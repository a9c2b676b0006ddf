/**
 * Resync amplification. A 3-byte Resync makes the hub encode and send the
 * whole hot set. One connection sending hundreds per second must cost a bounded number of
 * Snapshots: the hub answers at most one Resync per `minResyncIntervalMs` (1 s) per connection and
 * coalesces the rest into one Snapshot when the interval ends (none is refused: an SDK may see two
 * gaps in a row). A legit SDK's promotion latency is measured during the flood and without it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HotKeyClient } from '@hotkey/sdk';
import { MsgType } from '@hotkey/sdk/protocol';
import { printFigures, Probe } from '../support/attack.ts';
import { HubProcess } from '../support/hub-process.ts';
import { scrapeMetrics } from '../support/http.ts';
import { RawClient } from '../support/raw-client.ts';
import { drive } from '../support/traffic.ts';
import { delay, waitFor } from '../support/wait.ts';

const HOT_KEYS = 3000;
const FLOOD_MS = 3000;
const RESYNCS_PER_MS = 0.2; // 200 a second

let hub: HubProcess;
const clients: HotKeyClient[] = [];

test.before(async () => {
  hub = await HubProcess.start();
});

test.after(async () => {
  await Promise.all(clients.map((hk) => hk.close()));
  await hub?.stop('SIGKILL');
});

/** ms from the start of 3000 reads/s of `key` until the SDK sees it hot. */
async function promotionMs(hk: HotKeyClient, key: string): Promise<number> {
  const started = performance.now();
  const driver = drive([hk], key, 3000);
  try {
    await waitFor(`${key} hot`, () => hk.isHot(key), 8000);
    return Math.round(performance.now() - started);
  } finally {
    driver.stop();
  }
}

test('a flood of Resyncs costs a few Snapshots, not one each', async () => {
  const { client: attacker } = await RawClient.join(hub.url, 'shop');
  // a second reporter: keys only one instance reports are promoted within its solo budget
  const { client: second } = await RawClient.join(hub.url, 'shop');
  const keys = Array.from({ length: HOT_KEYS }, (_, i) => `item:flood-hot-${i}`);
  for (const reporter of [attacker, second])
    reporter.send({ t: MsgType.Report, keys, counts: keys.map(() => 100_000) });
  const legit = new HotKeyClient({ app: 'shop', hubs: [hub.url] });
  clients.push(legit);
  await legit.ready({ signal: AbortSignal.timeout(5000) });
  await waitFor('the hot set promoted', async () => (await attacker.ping()).hot.length >= HOT_KEYS, 8000);
  const quietMs = await promotionMs(legit, 'item:legit-quiet');

  let bytes = 0;
  let snapshots = 0;
  attacker.ws.on('message', (data: Buffer) => {
    bytes += data.byteLength;
    if (attacker.received.at(-1)?.t === MsgType.Snapshot) {
      snapshots++;
      if (process.env.DEBUG_RESYNC) console.log('snapshot at', Math.round(performance.now() - started));
    }
  });
  const probe = new Probe(hub.httpUrl, hub.child.pid!);
  const started = performance.now();
  let sent = 0;
  const flood = (async () => {
    while (performance.now() - started < FLOOD_MS && attacker.ws.readyState === attacker.ws.OPEN) {
      const due = Math.floor((performance.now() - started) * RESYNCS_PER_MS) - sent;
      for (let i = 0; i < due; i++) attacker.send({ t: MsgType.Resync });
      sent += Math.max(0, due);
      await delay(5);
    }
  })();
  const floodMs = await promotionMs(legit, 'item:legit-flood');
  await flood;
  await delay(1200); // the coalesced Snapshot at the end of the last interval
  const figures = {
    ...(await probe.stop()),
    resyncsSent: sent,
    snapshotsReceived: snapshots,
    bytesReceived: bytes,
    promotionQuietMs: quietMs,
    promotionDuringFloodMs: floodMs,
  };
  printFigures('resync-flood', figures);

  // about one per second of flood plus the first and the coalesced last; slack for timers firing
  // late on a loaded box (each late one restarts its interval)
  assert.ok(snapshots <= FLOOD_MS / 1000 + 5, `${snapshots} Snapshots for ${sent} Resyncs`);
  assert.ok(snapshots >= 2, 'Resyncs are answered, not ignored');
  assert.ok(bytes < 5 * 1024 * 1024, `${bytes} bytes sent to the flooding connection`);
  assert.is(figures.healthzFailures, 0);
  const coalesced = (await scrapeMetrics(hub.httpUrl)).hotkey_resyncs_coalesced_total ?? 0;
  assert.ok(coalesced >= sent - snapshots && coalesced <= sent, `/metrics: ${coalesced} of ${sent} Resyncs coalesced`);
});

test.run();
