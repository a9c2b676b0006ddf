/**
 * The SDK's metrics hook: a client's `stats()` as Prometheus text exposition (format 0.0.4), for a
 * service to serve from its own `/metrics`. No metrics library is involved (the SDK does not depend
 * on prom-client); a service that has a prom-client registry concatenates the two texts.
 *
 * Series carry one label, `app` (one value per client), so their cardinality is fixed. Integrations
 * (the ioredis wrapper's per-node breaker, …) add series of their own with
 * `registerMetricsSource()`; their size is bounded here, whatever a source returns:
 * MAX_METRICS_SOURCES sources per client, MAX_SOURCE_SAMPLES samples per source and scrape,
 * MAX_SAMPLE_LABELS labels per sample. What does not fit, does not parse or throws is left out and
 * counted (`<prefix>metrics_samples_dropped_total`, `<prefix>metrics_source_errors_total`).
 */
import type { ClientStats, HotKeyClient } from '../client.ts';
import type { PushCounters } from '../read/push.ts';
import { metricsSourcesOf, type MetricSample } from './metrics-sources.ts';

export { MAX_METRICS_SOURCES, registerMetricsSource } from './metrics-sources.ts';
export type { MetricSample, MetricsSource } from './metrics-sources.ts';

export interface MetricsTextOptions {
  /** @default 'hotkey_sdk_' prepended to every series name */
  prefix?: string;
}

/** samples one source may add per scrape; the rest are dropped (counted) */
export const MAX_SOURCE_SAMPLES = 256;
/** labels one sample may carry besides `app` */
export const MAX_SAMPLE_LABELS = 4;

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

interface Drops {
  samples: number;
  sourceErrors: number;
}
const drops = new WeakMap<HotKeyClient, Drops>();

type Kind = 'counter' | 'gauge';
type ScalarStat = Exclude<keyof ClientStats, 'push'>;

/** Every field of stats(), classified: a new field fails to compile until it is listed here. */
const STATS: Record<ScalarStat, [Kind, string]> = {
  hits: ['counter', 'get() answered from the local cache'],
  misses: ['counter', 'get() that called the loader because the key was not hot, cached or leased'],
  unleased: ['counter', 'misses of hot keys whose lease was not current'],
  loads: ['counter', 'loader calls of hot keys (single flight)'],
  coalesced: ['counter', 'get() calls that joined a load in flight'],
  loadErrors: ['counter', 'hot-key loads that failed'],
  refreshes: ['counter', 'background reloads ahead of expiry (refresh-ahead)'],
  refreshesSkipped: ['counter', 'refreshes put off by a full load limiter'],
  staleServed: ['counter', 'get() answered with a value past cacheTtlMs because its reload failed (stale-if-error)'],
  loadTimeouts: ['counter', 'hot-key loads not settled within loadTimeoutMs'],
  loadsInFlight: ['gauge', 'hot-key loads running now'],
  loadsQueued: ['gauge', 'hot-key loads waiting for a load limiter slot'],
  loadsRejected: ['counter', 'hot-key loads refused by a full load limiter (HK_ERR_LOAD_LIMIT)'],
  undefinedLoads: ['counter', 'hot-key loads that resolved to undefined (not cached)'],
  reports: ['counter', 'report frames sent to hubs'],
  reportedKeys: ['counter', 'keys in report frames'],
  reportsDropped: ['counter', 'reports dropped because the socket was backed up'],
  hotKeys: ['gauge', 'keys hot at this instance'],
  cacheSize: ['gauge', 'values in the local cache'],
  evictions: ['counter', 'local cache evictions'],
  expirations: ['counter', 'local cache expirations'],
  candidates: ['gauge', 'keys with an exact access counter'],
  candidatesEvicted: ['counter', 'keys evicted from the access counters'],
  invalidations: ['counter', 'invalidations applied'],
  invalidationsPending: ['gauge', 'invalidate() calls awaiting the hub'],
  invalidateTimeouts: ['counter', 'invalidate() calls that timed out'],
  resyncs: ['counter', 'resyncs with a hub (cache dropped)'],
  hubs: ['gauge', 'hubs with a live connection'],
  instances: ['gauge', 'SDK instances of the app, as a hub last reported'],
  rateLimited: ['counter', 'accesses of rate-limited keys refused'],
  rateAdmitted: ['counter', 'accesses of rate-limited keys admitted'],
  surgeLocalKeys: ['gauge', 'keys served locally on a surge here, awaiting their hub'],
  surgeLocalPromotions: ['counter', 'keys served locally on a surge here before their hub promoted them'],
  surgeLocalConfirmed: ['counter', 'local surges their hub then promoted'],
  surgeLocalDropped: ['counter', 'local surges dropped unconfirmed (in time, over maxBytes, evicted)'],
  recentReads: ['gauge', 'cold reads kept for the load of a key that may surge (tracked prefixes)'],
  recentReadsUsed: ['counter', 'hot loads answered by a kept cold read'],
  holdsSent: ['counter', 'keys registered with their owner hub before being served locally (protocol 3)'],
  holdsWritten: ['counter', 'registrations answered Written: the value read before was thrown away and loaded again'],
  holdsRefused: [
    'counter',
    'registrations refused (over share, not the owner, directory full) or lost with their link',
  ],
};
const PUSH: Record<keyof PushCounters, string> = {
  pushesSent: 'values pushed to the hub after a Fill',
  pushesUnserialisable: 'values not pushed: not of a type that round-trips',
  pushesOversized: 'values not pushed: over maxPushBytes',
  valuesInjected: 'pushed values injected without calling the loader',
  valuesOutdated: 'pushed values ignored: version not above the last',
  valuesGuarded: 'pushed values ignored: within the guard time of a local drop',
  valuesUndecodable: 'pushed values ignored: undecodable or undefined',
  valuesUnvouched: 'pushed values ignored: key not hot here under that hub',
  pushesUnvouched: 'values not pushed: the adapter cannot vouch for them (untracked, expiring)',
  valuesForeign: 'pushed records ignored: another namespace than this instance uses',
  updatesSent: 'invalidations sent with the new value (update writes)',
  updatesPlain: 'update writes sent as plain invalidations (key not shared here, value not pushable)',
  updatesInjected: 'update values injected with their invalidation',
};

/** The names of the client's own families (without prefix and `_total`): sources may not add to them. */
const OWN = new Set([
  ...Object.keys(STATS).map(snake),
  ...Object.keys(PUSH).map((f) => `push_${snake(f)}`),
  'metrics_samples_dropped',
  'metrics_source_errors',
]);

interface Family {
  type: Kind;
  help: string;
  lines: string[];
}

/**
 * `hk.stats()` and the series of its registered sources as Prometheus text (0.0.4), every series
 * with the label `app`. Pass several clients (of different apps) to get one valid text for all.
 * Cheap: it reads counters, never the hit path. Serve it with `content-type: text/plain; version=0.0.4`.
 */
export function metricsText(clients: HotKeyClient | readonly HotKeyClient[], options: MetricsTextOptions = {}): string {
  const prefix = options.prefix ?? 'hotkey_sdk_';
  if (typeof prefix !== 'string' || (prefix !== '' && !NAME.test(prefix)))
    throw new TypeError(`metrics prefix must match ${NAME}: ${String(prefix)}`);
  const families = new Map<string, Family>();
  const series = new Set<string>();
  for (const hk of Array.isArray(clients) ? clients : [clients as HotKeyClient]) collect(hk, prefix, families, series);
  let out = '';
  for (const [name, f] of families)
    out += `# HELP ${name} ${escapeHelp(f.help)}\n# TYPE ${name} ${f.type}\n${f.lines.join('')}`;
  return out;
}

/** Adds hk's series to `families`; `series` (name and labels) keeps each one unique across clients and sources. */
function collect(hk: HotKeyClient, prefix: string, families: Map<string, Family>, series: Set<string>): void {
  let d = drops.get(hk);
  if (!d) drops.set(hk, (d = { samples: 0, sourceErrors: 0 }));
  const app = `app="${escapeLabel(hk.app)}"`;
  const add = (name: string, type: Kind, help: string, value: number, labels = app): boolean => {
    const full = prefix + snake(name) + (type === 'counter' ? '_total' : '');
    let f = families.get(full);
    if (!f) families.set(full, (f = { type, help, lines: [] }));
    else if (f.type !== type) return false;
    const id = `${full}{${labels}}`;
    if (series.has(id)) return false;
    series.add(id);
    f.lines.push(`${id} ${formatValue(value)}\n`);
    return true;
  };
  const st = hk.stats();
  for (const [field, [type, help]] of Object.entries(STATS) as [ScalarStat, [Kind, string]][])
    add(field, type, help, st[field]);
  for (const [field, help] of Object.entries(PUSH) as [keyof PushCounters, string][])
    add(`push_${snake(field)}`, 'counter', help, st.push[field]);

  for (const source of metricsSourcesOf(hk)) {
    let samples: readonly MetricSample[];
    try {
      samples = source();
      if (!Array.isArray(samples)) throw new TypeError('a metrics source must return an array');
    } catch {
      d.sourceErrors++;
      continue;
    }
    if (samples.length > MAX_SOURCE_SAMPLES) d.samples += samples.length - MAX_SOURCE_SAMPLES;
    for (const s of samples.slice(0, MAX_SOURCE_SAMPLES)) {
      const labels = sampleLabels(s, app);
      // a source cannot add to the client's own families (a clash with stats() would mislead)
      if (labels === undefined || OWN.has(snake(s.name)) || !add(s.name, s.type, s.help, s.value, labels)) d.samples++;
    }
  }
  add(
    'metrics_samples_dropped',
    'counter',
    'metrics source samples left out: invalid, over a bound or a type clash',
    d.samples,
  );
  add('metrics_source_errors', 'counter', 'metrics sources that threw or returned no array', d.sourceErrors);
}

/** The sample's label text with `app` first, or undefined if the sample is not valid. */
function sampleLabels(s: MetricSample, app: string): string | undefined {
  if (typeof s !== 'object' || s === null) return undefined;
  if (typeof s.name !== 'string' || !NAME.test(s.name) || typeof s.help !== 'string') return undefined;
  if ((s.type !== 'counter' && s.type !== 'gauge') || typeof s.value !== 'number') return undefined;
  let text = app;
  if (s.labels === undefined) return text;
  const entries = Object.entries(s.labels);
  if (entries.length > MAX_SAMPLE_LABELS) return undefined;
  for (const [k, v] of entries) {
    if (!LABEL_NAME.test(k) || k === 'app' || k.startsWith('__') || typeof v !== 'string') return undefined;
    text += `,${k}="${escapeLabel(v)}"`;
  }
  return text;
}

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}
function formatValue(v: number): string {
  if (Number.isFinite(v)) return String(v);
  return Number.isNaN(v) ? 'NaN' : v > 0 ? '+Inf' : '-Inf';
}
