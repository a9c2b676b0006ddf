import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseExposition, type Exposition } from '../../../../test/support/exposition.ts';
import { at, closeAll, setup } from '../../../../test/support/sdk-client.ts';
import { HotKeyClient } from '../client.ts';
import {
  MAX_METRICS_SOURCES,
  MAX_SAMPLE_LABELS,
  MAX_SOURCE_SAMPLES,
  metricsText,
  registerMetricsSource,
  type MetricSample,
} from './metrics.ts';

const offline: HotKeyClient[] = [];
test.after.each(async () => {
  await closeAll();
  for (const hk of offline.splice(0)) await hk.close();
});

/** A client with no hub to reach: stats() still answers, get() calls loaders directly. */
function client(app = 'shop'): HotKeyClient {
  const hk = new HotKeyClient({ app, hubs: 'ws://127.0.0.1:1', reconnectMinMs: 1000, reconnectMaxMs: 5000 });
  offline.push(hk);
  return hk;
}

function value(x: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  return x.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

test('every stats() field is a series with HELP and TYPE: counters end in _total, gauges do not; one app label', () => {
  const hk = client();
  const x = parseExposition(metricsText(hk));
  assert.is(x.types.get('hotkey_sdk_hits_total'), 'counter');
  assert.is(x.types.get('hotkey_sdk_stale_served_total'), 'counter');
  assert.is(x.types.get('hotkey_sdk_loads_rejected_total'), 'counter');
  assert.is(x.types.get('hotkey_sdk_push_values_injected_total'), 'counter');
  assert.is(x.types.get('hotkey_sdk_loads_in_flight'), 'gauge');
  assert.is(x.types.get('hotkey_sdk_hot_keys'), 'gauge');
  const st = hk.stats();
  const fields = Object.keys(st).length - 1 + Object.keys(st.push).length;
  assert.is(x.samples.length, fields + 2, 'every field, plus the two drop counters');
  for (const s of x.samples) {
    assert.equal(s.labels, { app: 'shop' }, s.name);
    assert.ok(x.types.get(s.name) === 'gauge' ? !s.name.endsWith('_total') : s.name.endsWith('_total'), s.name);
  }
  const text = metricsText(hk, { prefix: 'svc_' });
  assert.ok(text.includes('# HELP svc_misses_total '));
  assert.not.ok(text.includes('hotkey_sdk_'));
  assert.throws(() => metricsText(hk, { prefix: 'bad prefix' }), /prefix/);
});

test('counters move when stats move: misses of a cold key, stale-if-error and the limiter of a hot one', async () => {
  const cold = client();
  await cold.get('user:1', () => 'a');
  await cold.get('user:2', () => 'b');
  assert.is(value(parseExposition(metricsText(cold)), 'hotkey_sdk_misses_total'), 2);

  const s = await setup({}, { refreshAheadRatio: 1, staleIfErrorMs: 3000 });
  assert.is(await s.hk.get('k', () => 'v1'), 'v1');
  const before = parseExposition(metricsText(s.hk));
  assert.is(value(before, 'hotkey_sdk_loads_total'), 1);
  assert.is(value(before, 'hotkey_sdk_stale_served_total'), 0);
  assert.is(value(before, 'hotkey_sdk_hot_keys'), 1);
  await at(s, 1500);
  assert.is(await s.hk.get('k', () => Promise.reject(new Error('db down'))), 'v1');
  const after = parseExposition(metricsText(s.hk));
  assert.is(value(after, 'hotkey_sdk_stale_served_total'), 1);
  assert.is(value(after, 'hotkey_sdk_loads_total'), 2);
  assert.is(value(after, 'hotkey_sdk_loads_total'), s.hk.stats().loads);
});

test('a registered source adds its series with the app label; label values are escaped; it can be removed', () => {
  const hk = client('sh"op');
  const node = 'a\\b"c\nd';
  const remove = registerMetricsSource(hk, 'breaker', () => [
    {
      name: 'breaker_state',
      type: 'gauge',
      help: 'breaker state: 0 closed, 1 half-open, 2 open',
      value: 2,
      labels: { node },
    },
    { name: 'breaker_opens', type: 'counter', help: 'breaker opened', value: 3, labels: { node } },
  ]);
  const text = metricsText(hk);
  assert.ok(text.includes('hotkey_sdk_breaker_state{app="sh\\"op",node="a\\\\b\\"c\\nd"} 2\n'), text);
  const x = parseExposition(text);
  assert.is(x.types.get('hotkey_sdk_breaker_state'), 'gauge');
  assert.is(x.types.get('hotkey_sdk_breaker_opens_total'), 'counter');
  assert.is(value(x, 'hotkey_sdk_breaker_opens_total'), 3);
  remove();
  assert.not.ok(metricsText(hk).includes('breaker'));
});

test('several clients make one valid text: one HELP/TYPE per family, a series per app', () => {
  const a = client('shop');
  const b = client('cart');
  for (const hk of [a, b])
    registerMetricsSource(hk, 'x', () => [
      { name: 'extra', type: 'gauge', help: 'h', value: 1, labels: { node: 'n1' } },
    ]);
  const x = parseExposition(metricsText([a, b]));
  const apps = x.samples.filter((s) => s.name === 'hotkey_sdk_hits_total').map((s) => s.labels.app);
  assert.equal(apps, ['shop', 'cart']);
  assert.is(x.samples.filter((s) => s.name === 'hotkey_sdk_extra').length, 2);
});

test('bounded: samples past MAX_SOURCE_SAMPLES, invalid or clashing samples and throwing sources are left out and counted', () => {
  const hk = client();
  registerMetricsSource(hk, 'many', () =>
    Array.from({ length: MAX_SOURCE_SAMPLES + 10 }, (_, i) => ({
      name: 'many',
      type: 'gauge' as const,
      help: 'h',
      value: i,
      labels: { node: String(i) },
    })),
  );
  const tooManyLabels = Object.fromEntries(Array.from({ length: MAX_SAMPLE_LABELS + 1 }, (_, i) => [`l${i}`, 'v']));
  const bad: unknown[] = [
    { name: 'bad name', type: 'gauge', help: 'h', value: 1 },
    { name: 'ok', type: 'histogram', help: 'h', value: 1 },
    { name: 'ok', type: 'gauge', help: 'h', value: '1' },
    { name: 'ok', type: 'gauge', help: 'h', value: 1, labels: { app: 'other' } },
    { name: 'ok', type: 'gauge', help: 'h', value: 1, labels: { 'bad-label': 'v' } },
    { name: 'ok', type: 'gauge', help: 'h', value: 1, labels: tooManyLabels },
    { name: 'hits', type: 'counter', help: 'a clash with stats()', value: 99 },
    { name: 'dup', type: 'gauge', help: 'h', value: 1 },
    { name: 'dup', type: 'gauge', help: 'h', value: 2 },
    { name: 'dup', type: 'counter', help: 'a family of its own: hotkey_sdk_dup_total', value: 1 },
    { name: 'dup_total', type: 'gauge', help: 'type clash with it', value: 1 },
    null,
  ];
  registerMetricsSource(hk, 'bad', () => bad as MetricSample[]);
  registerMetricsSource(hk, 'throws', () => {
    throw new Error('boom');
  });
  registerMetricsSource(hk, 'not-array', () => 42 as unknown as MetricSample[]);
  const x = parseExposition(metricsText(hk));
  assert.is(x.samples.filter((s) => s.name === 'hotkey_sdk_many').length, MAX_SOURCE_SAMPLES);
  assert.is(x.samples.filter((s) => s.name === 'hotkey_sdk_dup').length, 1);
  assert.is(x.types.get('hotkey_sdk_dup_total'), 'counter');
  assert.is(value(x, 'hotkey_sdk_hits_total'), 0, 'the client own series is not overridden');
  assert.not.ok(x.types.has('hotkey_sdk_ok'));
  assert.is(value(x, 'hotkey_sdk_metrics_samples_dropped_total'), 10 + bad.length - 2);
  assert.is(value(x, 'hotkey_sdk_metrics_source_errors_total'), 2);

  for (let i = 4; i < MAX_METRICS_SOURCES; i++) registerMetricsSource(hk, `s${i}`, () => []);
  registerMetricsSource(hk, 'many', () => []); // replacing one is fine at the cap
  assert.throws(() => registerMetricsSource(hk, 'one-more', () => []), RangeError);
  assert.throws(() => registerMetricsSource(hk, '', () => []), TypeError);
  assert.throws(() => registerMetricsSource(hk, 'x', 42 as never), TypeError);
});

test.run();
