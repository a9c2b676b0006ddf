/**
 * Where integrations register the series they add to a client's metrics text (the ioredis and
 * node-redis breakers, …). Apart from the text exposition (metrics.ts) so that registering, which
 * every wrapped client does, does not load the exposition code: only a service that serves
 * `metricsText()` (from `@hotkey/sdk/metrics`) loads it.
 */
import type { HotKeyClient } from '../client.ts';

/** A series an integration adds: `name` goes after the prefix; a counter's name gets `_total`. */
export interface MetricSample {
  name: string;
  type: 'counter' | 'gauge';
  help: string;
  value: number;
  /** a small, bounded label set (e.g. one `node` per Redis master); `app` is added */
  labels?: Readonly<Record<string, string>>;
}

export type MetricsSource = () => readonly MetricSample[];

/** sources per client; registering more throws a RangeError */
export const MAX_METRICS_SOURCES = 16;

const sources = new WeakMap<HotKeyClient, Map<string, MetricsSource>>();

/**
 * Adds `source`'s samples to `metricsText(hk)` under `name` (a second registration under the same
 * name replaces the first). Returns a function that removes it. At most MAX_METRICS_SOURCES per client.
 */
export function registerMetricsSource(hk: HotKeyClient, name: string, source: MetricsSource): () => void {
  if (typeof name !== 'string' || name === '') throw new TypeError('metrics source name must be a non-empty string');
  if (typeof source !== 'function') throw new TypeError('metrics source must be a function');
  let map = sources.get(hk);
  if (!map) sources.set(hk, (map = new Map()));
  if (!map.has(name) && map.size >= MAX_METRICS_SOURCES)
    throw new RangeError(`at most ${MAX_METRICS_SOURCES} metrics sources per client`);
  map.set(name, source);
  return () => {
    if (map.get(name) === source) map.delete(name);
  };
}

/** The sources registered for `hk`, in registration order. */
export function metricsSourcesOf(hk: HotKeyClient): Iterable<MetricsSource> {
  return sources.get(hk)?.values() ?? [];
}
