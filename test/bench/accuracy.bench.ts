/**
 * Benchmark 6 — accuracy on Zipf traces (s = 0.9, 1.1, 1.3) with planted flash keys.
 *
 * The trace is spread over simulated service instances, each counting with the SDK's real
 * AccessWindow and reporting what `collect` returns at the per-instance threshold
 * (`localThreshold`) every 100 ms (flush phases staggered, as real instances are). The reports
 * feed the hub's real Aggregator; every promotion it makes is graded against the exact oracle:
 * precision and recall at the threshold, and the hard bounds (every key at >= 1.2 × threshold
 * promoted, none at <= 0.8 × threshold). The naive baseline runs the same trace: every instance
 * reports every key every 500 ms into exact per-key windows. Time is simulated, so the figures are
 * deterministic and independent of machine load.
 */
import { AccessWindow } from '../../sdk/src/counting/window.ts';
import { RuleSet, localThreshold, parseRules } from '../../sdk/src/rules.ts';
import { Aggregator } from '../../hub/src/core/aggregate/aggregator.ts';
import { reporterBit } from '../../hub/src/core/aggregate/reporter-count.ts';
import { NaiveWindows } from './baseline/naive-window.ts';
import { benchMain, type BenchRow } from './harness.ts';
import { ExactOracle, generateTrace, mulberry32, type FlashKey, type Trace } from './zipf.ts';

const THRESHOLD = 2000;
const WINDOW_MS = 1000;
const INSTANCES = 20;
const SDK_FLUSH_MS = 100;
const NAIVE_FLUSH_MS = 500;
const HUB_TICK_MS = 100;

/** Flash keys at known multiples of the threshold, each active for 2.5 s at a staggered start. */
function flashKeys(durationMs: number): FlashKey[] {
  const multiples = [0.5, 0.7, 0.8, 0.9, 0.95, 1.05, 1.1, 1.2, 1.3, 1.5, 2, 5, 20];
  return multiples.map((m, i) => {
    const startMs = 200 + ((i * 617) % Math.max(1, durationMs - 3000));
    return { key: `flash:${m}x`, rate: m * THRESHOLD, startMs, endMs: startMs + 2500 };
  });
}

/** Which instance serves each access: uniform, seeded (a load balancer spreading requests). */
function assignInstances(trace: Trace, seed: number): Uint8Array {
  const random = mulberry32(seed);
  const out = new Uint8Array(trace.ids.length);
  for (let i = 0; i < out.length; i++) out[i] = Math.floor(random() * INSTANCES);
  return out;
}

/** Our path: AccessWindow per instance -> collect at the local threshold -> Aggregator. */
function runOurs(trace: Trace, instanceOf: Uint8Array): Set<string> {
  const rules = parseRules([{ match: '*', threshold: THRESHOLD, windowMs: WINDOW_MS }]);
  const ruleSet = new RuleSet(rules);
  const local = [localThreshold(rules[0]!, INSTANCES)];
  const promoted = new Set<string>();
  const aggregator = new Aggregator({
    rules,
    listener: {
      promote: (key) => promoted.add(key),
      demote: () => undefined,
    },
    random: mulberry32(5),
  });
  const windows = Array.from({ length: INSTANCES }, () => new AccessWindow({ rules: ruleSet, now: 0 }));
  const bits = Array.from({ length: INSTANCES }, (_, i) => reporterBit(`instance-${i}`));
  const nextFlush = Array.from({ length: INSTANCES }, (_, i) => ((i + 1) * SDK_FLUSH_MS) / INSTANCES);
  let nextTick = HUB_TICK_MS;

  const flushUntil = (t: number) => {
    for (;;) {
      let who = -1;
      let when = nextTick <= t ? nextTick : Infinity;
      for (let i = 0; i < INSTANCES; i++)
        if (nextFlush[i]! <= t && nextFlush[i]! < when) (when = nextFlush[i]!), (who = i);
      if (when === Infinity) return;
      if (who < 0) {
        aggregator.tick(when);
        nextTick += HUB_TICK_MS;
        continue;
      }
      const w = windows[who]!;
      w.advance(when);
      const c = w.collect(local);
      if (c.keys.length) aggregator.ingest(c.keys, c.counts, bits[who]!, when);
      nextFlush[who]! += SDK_FLUSH_MS;
    }
  };

  for (let i = 0; i < trace.ids.length; i++) {
    const t = trace.times[i]!;
    flushUntil(t);
    const inst = instanceOf[i]!;
    windows[inst]!.advance(t);
    windows[inst]!.track(trace.names[trace.ids[i]!]!);
  }
  flushUntil(trace.durationMs + 2 * WINDOW_MS);
  return promoted;
}

/** Naive path: Map counts per instance -> every key every 500 ms -> exact windows. */
function runNaive(trace: Trace, instanceOf: Uint8Array): Set<string> {
  const windows = new NaiveWindows({ threshold: THRESHOLD, windowMs: WINDOW_MS });
  const promoted = new Set<string>();
  const counts = Array.from({ length: INSTANCES }, () => new Map<string, number>());
  const nextFlush = Array.from({ length: INSTANCES }, (_, i) => ((i + 1) * NAIVE_FLUSH_MS) / INSTANCES);
  let nextSweep = 1000;
  const flushUntil = (t: number) => {
    for (;;) {
      let who = -1;
      let when = nextSweep <= t ? nextSweep : Infinity;
      for (let i = 0; i < INSTANCES; i++)
        if (nextFlush[i]! <= t && nextFlush[i]! < when) (when = nextFlush[i]!), (who = i);
      if (when === Infinity) return;
      if (who < 0) {
        windows.sweep(when);
        nextSweep += 1000;
        continue;
      }
      for (const [key, count] of counts[who]!) if (windows.add(key, count, when) >= 0) promoted.add(key);
      counts[who]!.clear();
      nextFlush[who]! += NAIVE_FLUSH_MS;
    }
  };
  for (let i = 0; i < trace.ids.length; i++) {
    flushUntil(trace.times[i]!);
    const map = counts[instanceOf[i]!]!;
    const key = trace.names[trace.ids[i]!]!;
    map.set(key, (map.get(key) ?? 0) + 1);
  }
  flushUntil(trace.durationMs + 2 * WINDOW_MS);
  return promoted;
}

benchMain(async ({ quick }) => {
  const durationMs = quick ? 4000 : 10_000;
  const rows: BenchRow[] = [];
  for (const s of [0.9, 1.1, 1.3]) {
    const trace = generateTrace({
      keys: quick ? 20_000 : 100_000,
      s,
      rate: quick ? 100_000 : 200_000,
      durationMs,
      seed: Math.round(s * 1000),
      flash: flashKeys(durationMs),
    });
    const instanceOf = assignInstances(trace, 77);
    const oracle = new ExactOracle(trace, WINDOW_MS);
    const ours = oracle.grade(runOurs(trace, instanceOf), THRESHOLD);
    const naive = oracle.grade(runNaive(trace, instanceOf), THRESHOLD);
    const label = `6 accuracy s=${s}`;
    const conditions = `${trace.ids.length / 1e6}M accesses, ${INSTANCES} instances, ${ours.hot} truly hot`;
    rows.push(
      {
        bench: label,
        metric: 'precision',
        ours: ours.precision,
        baseline: naive.precision,
        unit: '',
        better: 'higher',
        target: { aim: 0.99 },
        note: `${conditions}; ours below T: ${ours.belowKeys.join(' ') || 'none'}; naive: ${naive.belowKeys.join(' ') || 'none'}`,
      },
      {
        bench: label,
        metric: 'recall',
        ours: ours.recall,
        baseline: naive.recall,
        unit: '',
        better: 'higher',
        target: { aim: 1 },
      },
      {
        bench: label,
        metric: 'keys ≥1.2T missed + keys ≤0.8T promoted',
        ours: ours.missedClear + ours.falseClear,
        baseline: naive.missedClear + naive.falseClear,
        unit: 'keys',
        better: 'lower',
        target: { reach: 0 },
        note: `missed+false: ours ${ours.missedClear}+${ours.falseClear}${[
          ...ours.missedClearKeys,
          ...ours.falseClearKeys,
        ]
          .slice(0, 3)
          .map((k) => ` ${k}`)
          .join('')}, naive ${naive.missedClear}+${naive.falseClear}`,
      },
    );
  }
  return rows;
});
