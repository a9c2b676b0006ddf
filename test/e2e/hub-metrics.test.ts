/**
 * /metrics through prom-client: the text parses as Prometheus exposition format, every series the
 * hub exported before keeps its name (and has no labels), the new histograms carry per-app labels,
 * process metrics come from prom-client's defaults in a registry per hub (two hubs in this one
 * process), and in open mode the app label set is capped (`app="other"` past the cap).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HotKeyClient } from '@hotkey/sdk';
import { MsgType } from '@hotkey/sdk/protocol';
import type { Hub } from '@hotkey/hub';
import { RawClient } from '../support/raw-client.ts';
import { waitFor } from '../support/wait.ts';
import { parseExposition, type Exposition } from '../support/exposition.ts';
import { startHubInProcess } from '../support/e2e.ts';

/** The series `/metrics` had before prom-client, by name (the feed's are exported by every hub with a dashboard). */
const OLD_SERIES = [
  'hotkey_connections',
  'hotkey_connections_accepted_total',
  'hotkey_apps',
  'hotkey_reports_total',
  'hotkey_records_ingested_total',
  'hotkey_ingest_rate',
  'hotkey_promotions_total',
  'hotkey_demotions_total',
  'hotkey_invalidations_total',
  'hotkey_invalidations_dropped_total',
  'hotkey_invalidations_fenced_total',
  'hotkey_keys_tracked',
  'hotkey_hot_keys',
  'hotkey_records_dropped_total',
  'hotkey_keys_evicted_total',
  'hotkey_records_ignored_total',
  'hotkey_slow_consumers_total',
  'hotkey_protocol_errors_total',
  'hotkey_http_requests_total',
  'hotkey_qps_history_keys',
  'hotkey_dashboard_pages',
  'hotkey_dashboard_frames_sent_total',
  'hotkey_dashboard_bytes_sent_total',
  'hotkey_dashboard_slow_dropped_total',
  'hotkey_dashboard_skipped_rounds_total',
  'hotkey_dashboard_refused_total',
  'hotkey_heap_used_bytes',
  'hotkey_rss_bytes',
];
/** What the flood protections did (test/fault/): counters and gauges without labels, on every hub. */
const PROTECTION_SERIES = [
  'hotkey_promotions_solo_refused_total',
  'hotkey_promotions_cap_refused_total',
  'hotkey_promotions_displaced_total',
  'hotkey_keys_refused_total',
  'hotkey_keys_evicted_over_share_total',
  'hotkey_keys_refused_address_total',
  'hotkey_key_table_addresses',
  'hotkey_intake_queued_total',
  'hotkey_intake_paused_total',
  'hotkey_intake_yields_total',
  'hotkey_intake_queued_bytes',
  'hotkey_invalidations_delayed_total',
  'hotkey_invalidations_rate_limited_total',
  'hotkey_resyncs_coalesced_total',
  'hotkey_ws_origin_refused_total',
  'hotkey_ws_unauthenticated_evicted_total',
  'hotkey_ws_prehello_over_budget_total',
  'hotkey_ws_unauthenticated',
  'hotkey_http_pending_connections',
  'hotkey_http_pending_evicted_total',
];
const HISTOGRAMS = [
  'hotkey_detection_latency_seconds',
  'hotkey_promotion_fanout_seconds',
  'hotkey_invalidation_ack_seconds',
  'hotkey_report_frame_bytes',
];

async function scrape(hub: Hub): Promise<Exposition> {
  const res = await fetch(`${hub.httpUrl}/metrics`, { signal: AbortSignal.timeout(5000) });
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

function appLabels(x: Exposition, name: string): Set<string> {
  return new Set(x.samples.filter((s) => s.name === `${name}_count`).map((s) => s.labels.app!));
}

const hubs: Hub[] = [];
const clients: HotKeyClient[] = [];
const peers: RawClient[] = [];
test.after(async () => {
  for (const c of clients) c.close();
  for (const p of peers) p.close();
  await Promise.all(hubs.map((h) => h.close()));
});

test('old series keep their names, new histograms have per-app labels, process metrics per hub', async () => {
  const config = { apps: { shop: { rules: [{ match: 'item:*', threshold: 20 }] }, blog: {} } };
  // maxAppLabels applies in open mode only: configured apps are all labelled
  const hub = await startHubInProcess({ config, tunables: { maxAppLabels: 1 } });
  hubs.push(hub);
  const hk = new HotKeyClient({ app: 'shop', hubs: [hub.url] });
  const blog = new HotKeyClient({ app: 'blog', hubs: [hub.url] });
  clients.push(hk, blog);
  await Promise.all([
    hk.ready({ signal: AbortSignal.timeout(5000) }),
    blog.ready({ signal: AbortSignal.timeout(5000) }),
  ]);
  for (let i = 0; i < 100; i++) hk.track('item:m');
  for (let i = 0; i < 500; i++) blog.track('post:1'); // reported (over 200 per instance), not promoted (under 1000)
  await waitFor('item:m hot', () => hk.isHot('item:m'), 4000);
  await hk.invalidate('item:m');
  await waitFor(
    'a report from blog',
    async () => appLabels(await scrape(hub), 'hotkey_report_frame_bytes').has('blog'),
    4000,
  );

  const x = await scrape(hub);
  for (const name of [...OLD_SERIES, ...PROTECTION_SERIES]) {
    const found = x.samples.filter((s) => s.name === name);
    assert.is(found.length, 1, `${name} exported once`);
    assert.equal(found[0]!.labels, {}, `${name} has no labels`);
  }
  assert.is(x.types.get('hotkey_promotions_total'), 'counter');
  assert.is(x.types.get('hotkey_connections'), 'gauge');
  assert.is(x.samples.find((s) => s.name === 'hotkey_promotions_total')!.value, 1);
  // the gauge reads the core (an SDK may be between reconnects on a loaded box: compare, don't assume 2)
  await waitFor(
    'hotkey_connections to match the core',
    async () =>
      (await scrape(hub)).samples.find((s) => s.name === 'hotkey_connections')!.value === hub.core.gauges().connections,
    5000,
  );
  assert.not.ok(x.types.has('hotkey_cluster_events_dropped_total'), 'cluster series only with a cluster coordinator');
  for (const name of HISTOGRAMS) assert.is(x.types.get(name), 'histogram', name);
  const count = (name: string, app: string) =>
    x.samples.find((s) => s.name === `${name}_count` && s.labels.app === app)?.value ?? 0;
  assert.is(count('hotkey_detection_latency_seconds', 'shop'), 1);
  assert.is(count('hotkey_promotion_fanout_seconds', 'shop'), 1);
  assert.is(count('hotkey_invalidation_ack_seconds', 'shop'), 1);
  assert.ok(count('hotkey_report_frame_bytes', 'shop') >= 1);
  assert.ok(count('hotkey_report_frame_bytes', 'blog') >= 1, 'every configured app is labelled, past maxAppLabels');
  const inf = x.samples.find(
    (s) => s.name === 'hotkey_report_frame_bytes_bucket' && s.labels.app === 'shop' && s.labels.le === '+Inf',
  );
  assert.is(inf?.value, count('hotkey_report_frame_bytes', 'shop'), 'buckets end in +Inf = count');
  for (const name of [
    'nodejs_eventloop_lag_seconds',
    'nodejs_heap_size_used_bytes',
    'process_cpu_user_seconds_total',
  ]) {
    assert.ok(x.types.has(name), `process metric ${name}`);
  }

  // a second hub in this process has a registry of its own (the global one would refuse the names)
  const other = await startHubInProcess();
  hubs.push(other);
  const y = await scrape(other);
  assert.is(
    y.samples.find((s) => s.name === 'hotkey_promotions_total')!.value,
    0,
    "the other hub's counters are its own",
  );
  assert.is(appLabels(y, 'hotkey_report_frame_bytes').size, 0);
});

test('open mode caps the app label set: past maxAppLabels apps share app="other"', async () => {
  const hub = await startHubInProcess({ tunables: { maxAppLabels: 3 } });
  hubs.push(hub);
  for (let i = 0; i < 6; i++) {
    const { client } = await RawClient.join(hub.url, `app${i}`);
    peers.push(client);
    client.send({ t: MsgType.Report, keys: ['k'], counts: [1] });
  }
  await waitFor(
    '6 reports ingested',
    async () => (await scrape(hub)).samples.find((s) => s.name === 'hotkey_reports_total')?.value === 6,
    4000,
  );
  const labels = appLabels(await scrape(hub), 'hotkey_report_frame_bytes');
  assert.is(labels.size, 4, [...labels].join(','));
  assert.ok(labels.has('other'));
  const x = await scrape(hub);
  const other = x.samples.find((s) => s.name === 'hotkey_report_frame_bytes_count' && s.labels.app === 'other');
  assert.is(other?.value, 3, 'three apps past the cap, counted together');
});

test.run();
