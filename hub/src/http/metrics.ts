/**
 * What the hub exposes at `GET /metrics`, through prom-client (the only module that imports it),
 * in a registry of its own per hub: several hubs run in one test process, and an embedder's global
 * registry stays theirs.
 *
 * The core's counters stay plain numbers bumped inline (core/observe/hub-metrics.ts); the `hotkey_*`
 * series (metric-series.ts) read them and the gauges when scraped, without labels. Histograms are
 * observed at most once per frame or per decision, never per record, as plain counts
 * (plain-histogram.ts: the ack histogram is observed on every write), and carry an `app` label:
 * apps come from the config, so the label set is bounded; in open mode (any app name) the first
 * `maxAppLabels` apps get their own label and the rest share `app="other"`. Process metrics
 * (event-loop lag, heap, GC, CPU) are prom-client's defaults, unprefixed (`nodejs_*`, `process_*`).
 */
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { HubMetrics, MetricsObserver } from '../core/observe/hub-metrics.ts';
import { CORE_FAMILIES, type Family, type MetricsSources, type Snapshot } from './metric-series.ts';
import { PlainHistogram } from './plain-histogram.ts';

export interface MetricsOptions {
  /** distinct `app` label values before the rest are counted as `app="other"` @default Infinity */
  maxAppLabels?: number;
  /** collect prom-client's process metrics @default true */
  processMetrics?: boolean;
}

/** The label value of apps past the cap. */
export const OTHER_APP = 'other';

const SECONDS_BUCKETS_DETECTION = [0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2, 5, 10];
const SECONDS_BUCKETS_FANOUT = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];
const SECONDS_BUCKETS_ACK = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const BYTES_BUCKETS_FRAME = [64, 256, 1024, 4096, 16_384, 65_536, 262_144, 1_048_576];

type Observer = { observe(value: number): void };
interface AppObservers {
  detection: Observer;
  fanout: Observer;
  ack: Observer;
  frame: Observer;
}

/** The hub's /metrics registry; the core's MetricsObserver (startHub plugs it in). */
export class MetricsRegistry implements MetricsObserver {
  readonly registry = new Registry();
  readonly #maxAppLabels: number;
  readonly #detection: PlainHistogram;
  readonly #fanout: PlainHistogram;
  readonly #ack: PlainHistogram;
  readonly #frame: PlainHistogram;
  readonly #apps = new Map<string, AppObservers>();
  #other: AppObservers | undefined;
  /** what the current scrape reads; set for the duration of `render()` */
  #snapshot: Snapshot | undefined;
  #scrapes: Promise<unknown> = Promise.resolve();
  readonly #groups = new Set<Family['group']>();

  constructor(options: MetricsOptions = {}) {
    this.#maxAppLabels = options.maxAppLabels ?? Infinity;
    const registers = [this.registry];
    this.#register(undefined);
    this.#detection = new PlainHistogram({
      name: 'hotkey_detection_latency_seconds',
      help: 'Time from the first counted slice of a key to its promotion (automatic promotions).',
      buckets: SECONDS_BUCKETS_DETECTION,
      registers,
    });
    this.#fanout = new PlainHistogram({
      name: 'hotkey_promotion_fanout_seconds',
      help: 'Time to encode a promotion and write it to every SDK socket of the app.',
      buckets: SECONDS_BUCKETS_FANOUT,
      registers,
    });
    this.#ack = new PlainHistogram({
      name: 'hotkey_invalidation_ack_seconds',
      help: 'Time from an SDK invalidation request to its ack (every SDK applied it or was fenced by its lease).',
      buckets: SECONDS_BUCKETS_ACK,
      registers,
    });
    this.#frame = new PlainHistogram({
      name: 'hotkey_report_frame_bytes',
      help: 'Size of the report frames received.',
      buckets: BYTES_BUCKETS_FRAME,
      registers,
    });
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** A promotion went out: its fan-out time and, for an automatic one, its detection latency. */
  promoted(app: string, fanoutMs: number, detectionMs: number | undefined): void {
    const o = this.#observers(app);
    o.fanout.observe(fanoutMs / 1000);
    if (detectionMs !== undefined) o.detection.observe(detectionMs / 1000);
  }

  invalidationAcked(app: string, ms: number): void {
    this.#observers(app).ack.observe(ms / 1000);
  }

  /** Once per report frame, never per record. */
  reportFrame(app: string, bytes: number): void {
    this.#observers(app).frame.observe(bytes);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text of every series: the core's counters `m`, and `sources` for the rest. */
  render(m: HubMetrics, sources: MetricsSources): Promise<string> {
    // one scrape at a time: the collect() callbacks read the snapshot across awaits
    const run = this.#scrapes.then(() => this.#render(m, sources));
    this.#scrapes = run.catch(() => {});
    return run;
  }

  async #render(m: HubMetrics, sources: MetricsSources): Promise<string> {
    for (const group of ['feed', 'cluster', 'admission'] as const) {
      if (sources[group] === undefined || this.#groups.has(group)) continue;
      this.#groups.add(group);
      this.#register(group);
    }
    this.#snapshot = { m, s: sources };
    try {
      return await this.registry.metrics();
    } finally {
      this.#snapshot = undefined;
    }
  }

  /** The plain-number series of one group; the feed and cluster ones once their source exists. */
  #register(group: Family['group']): void {
    for (const f of CORE_FAMILIES) {
      if (f.group !== group) continue;
      const read = () => {
        const x = this.#snapshot;
        return x === undefined ? 0 : (f.read(x) ?? 0);
      };
      this.addSeries({ name: f.name, type: f.type, help: f.help, read });
    }
  }

  /**
   * A series read from a part above the HTTP layer (the notifier), so that prom-client stays
   * behind this module. Call once per name, before the first scrape.
   */
  addSeries(series: { name: string; type: 'counter' | 'gauge'; help: string; read: () => number }): void {
    const { read } = series;
    const value = () => {
      const v = read();
      return Number.isFinite(v) && v > 0 ? v : 0;
    };
    const registers = [this.registry];
    if (series.type === 'counter')
      new Counter({
        name: series.name,
        help: series.help,
        registers,
        collect() {
          this.reset();
          this.inc(value());
        },
      });
    else
      new Gauge({
        name: series.name,
        help: series.help,
        registers,
        collect() {
          this.set(value());
        },
      });
  }

  #observers(app: string): AppObservers {
    const known = this.#apps.get(app);
    if (known !== undefined) return known;
    if (this.#apps.size >= this.#maxAppLabels) {
      this.#other ??= this.#labelled(OTHER_APP);
      return this.#other;
    }
    const o = this.#labelled(app);
    this.#apps.set(app, o);
    return o;
  }

  #labelled(app: string): AppObservers {
    return {
      detection: this.#detection.labels(app),
      fanout: this.#fanout.labels(app),
      ack: this.#ack.labels(app),
      frame: this.#frame.labels(app),
    };
  }
}
