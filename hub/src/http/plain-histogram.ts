/**
 * A Prometheus histogram with one label (`app`) kept as plain numbers: `observe` finds the bucket
 * and bumps three numbers, and the series are built only when scraped. prom-client's Histogram
 * validates and hashes its label set on every observation; the ack histogram is observed once per
 * write, on the path whose cost is the hub's price per write, so its bookkeeping stays this small.
 *
 * It is registered in a prom-client Registry as a metric of its own (`Registry.registerMetric`:
 * a `get()` that returns name, help, type and values) and renders as prom-client's Histogram
 * does: `_bucket{le,app}` cumulative per upper bound and `+Inf`, then `_sum` and `_count`.
 */
/** the part of a prom-client Registry it needs (prom-client itself stays behind metrics.ts) */
export interface MetricRegistry {
  registerMetric(metric: never): void;
}

/** One label value's counts. */
export class PlainObserver {
  /** observations per bucket, the last one past every bound (+Inf) */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  readonly #bounds: readonly number[];

  constructor(bounds: readonly number[]) {
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    // a value that is not a number is a hub fault: prom-client throws, so does this
    if (!Number.isFinite(value)) throw new TypeError(`histogram value is not a finite number: ${value}`);
    const b = this.#bounds;
    let i = 0;
    while (i < b.length && value > b[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

export class PlainHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  /** how prom-client's cluster aggregation merges it, as its own histograms */
  readonly aggregator = 'sum';
  /** its one label, and its buckets' upper bounds ascending (named as prom-client's Histogram names them) */
  readonly labelNames = ['app'] as const;
  readonly upperBounds: readonly number[];
  readonly #byApp = new Map<string, PlainObserver>();

  constructor(options: { name: string; help: string; buckets: readonly number[]; registers: MetricRegistry[] }) {
    this.name = options.name;
    this.help = options.help;
    this.upperBounds = [...options.buckets].sort((a, b) => a - b);
    for (const r of options.registers) r.registerMetric(this as never);
  }

  /** The counts of one `app` label value (kept: the caller bounds the label set). */
  labels(app: string): PlainObserver {
    let o = this.#byApp.get(app);
    if (o === undefined) this.#byApp.set(app, (o = new PlainObserver(this.upperBounds)));
    return o;
  }

  /** What prom-client's Registry renders, label sets in the order they were first observed. */
  get(): { name: string; help: string; type: string; values: Sample[]; aggregator: string } {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const [app, o] of this.#byApp) {
      // as prom-client: a label set appears once observed
      if (o.count === 0) continue;
      let acc = 0;
      for (let i = 0; i < this.upperBounds.length; i++) {
        acc += o.counts[i]!;
        values.push({ metricName: bucket, labels: { le: this.upperBounds[i]!, app }, value: acc });
      }
      values.push({ metricName: bucket, labels: { le: '+Inf', app }, value: o.count });
      values.push({ metricName: `${this.name}_sum`, labels: { app }, value: o.sum });
      values.push({ metricName: `${this.name}_count`, labels: { app }, value: o.count });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** Registry.resetMetrics */
  reset(): void {
    this.#byApp.clear();
  }
}
