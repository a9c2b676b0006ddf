/**
 * The circuit breakers' per-node state (breaker.ts) through the client's metrics hook
 * (`metricsText`), one source per adapter: `<adapter>_breaker_open` (1 while open or half-open)
 * and the failures, openings and rejections as counters, one `node` label each (nodes are the
 * deployment's masters: a bounded set). Several wrapped clients of one hk (duplicates, pools, one
 * client per service part) have breakers of their own for the same nodes: summed per node.
 */
import type { HotKeyClient } from '../../client/client.ts';
import { registerMetricsSource, type MetricSample } from '../../client/observe/metrics-sources.ts';
import type { BreakerStats } from './breaker.ts';

/** What is exported of a wrapped client's breakers. */
export interface BreakerStatsSource {
  stats(): BreakerStats[];
}

/**
 * Every live wrapped client's breakers, per HotKeyClient and adapter; held weakly, so that a
 * wrapped client dropped without an 'end' (one that never connected) is not kept alive by hk.
 */
const breakersOf = new WeakMap<HotKeyClient, Map<string, Set<WeakRef<BreakerStatsSource>>>>();
const collected = new FinalizationRegistry<{ all: Set<WeakRef<BreakerStatsSource>>; ref: WeakRef<BreakerStatsSource> }>(
  ({ all, ref }) => all.delete(ref),
);

/**
 * Exports `breakers` under `adapter`'s series names (`ioredis`, `node_redis`) until `untilEnd`
 * calls back (the wrapped client ended).
 */
export function exportBreakerMetrics(
  hk: HotKeyClient,
  adapter: string,
  breakers: BreakerStatsSource,
  untilEnd: (ended: () => void) => void,
): void {
  let byAdapter = breakersOf.get(hk);
  if (byAdapter === undefined) breakersOf.set(hk, (byAdapter = new Map()));
  let all = byAdapter.get(adapter);
  if (all === undefined) {
    const set = new Set<WeakRef<BreakerStatsSource>>();
    all = set;
    byAdapter.set(adapter, set);
    registerMetricsSource(hk, `${adapter.replaceAll('_', '-')}-breaker`, () => breakerSamples(adapter, live(set)));
  }
  const ref = new WeakRef(breakers);
  all.add(ref);
  collected.register(breakers, { all, ref }, ref);
  untilEnd(() => {
    all.delete(ref);
    collected.unregister(ref);
  });
}

function* live(all: Set<WeakRef<BreakerStatsSource>>): Iterable<BreakerStatsSource> {
  for (const ref of all) {
    const breakers = ref.deref();
    if (breakers !== undefined) yield breakers;
  }
}

function breakerSamples(adapter: string, all: Iterable<BreakerStatsSource>): MetricSample[] {
  const byNode = new Map<string, { open: boolean; failures: number; opened: number; rejected: number }>();
  for (const breakers of all) {
    for (const s of breakers.stats()) {
      const sum = byNode.get(s.node) ?? { open: false, failures: 0, opened: 0, rejected: 0 };
      sum.open ||= s.state !== 'closed';
      sum.failures += s.failures;
      sum.opened += s.opened;
      sum.rejected += s.rejected;
      byNode.set(s.node, sum);
    }
  }
  const out: MetricSample[] = [];
  for (const [node, s] of byNode) {
    const labels = { node };
    out.push(
      {
        name: `${adapter}_breaker_open`,
        type: 'gauge',
        help: "1 while the node's circuit breaker is open or half-open.",
        value: s.open ? 1 : 0,
        labels,
      },
      {
        name: `${adapter}_breaker_failures`,
        type: 'counter',
        help: 'Failed or unanswered commands counted by the breaker.',
        value: s.failures,
        labels,
      },
      {
        name: `${adapter}_breaker_opened`,
        type: 'counter',
        help: 'Times the breaker opened.',
        value: s.opened,
        labels,
      },
      {
        name: `${adapter}_breaker_rejected`,
        type: 'counter',
        help: 'Commands and loads failed fast (HK_ERR_BREAKER_OPEN).',
        value: s.rejected,
        labels,
      },
    );
  }
  return out;
}
