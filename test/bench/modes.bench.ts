/**
 * Benchmark 8 — detection modes on a trace with a shifting baseline: what a fixed threshold
 * misses or over-promotes when normal traffic drifts, and what the baseline and top-k modes do.
 *
 * The trace (simulated time, seeded, so figures are deterministic): Zipf background traffic
 * (20,000 keys, s = 1.0) and a normally busy key family (`busy:0..9`, 300–840/s each), both
 * under a diurnal ramp (× 0.2 → × 1.8 → × 0.2 over the trace); and ten quiet keys (`jump:*`,
 * 10/s) that each jump 20× for 15 s at staggered times after the warm-up. Ten simulated
 * instances count with the SDK's real AccessWindow (with `sampleRate` where stated) and report
 * at the hub's per-instance threshold every 100 ms; the hub's real Aggregator decides.
 *
 * Graded over the whole run (the baseline mode's 30-window warm-up included: it promotes
 * nothing then, a fixed threshold does):
 * - fixed and baseline modes against the anomalies: a promotion of a jump key during its surge
 *   is a true positive, any other promoted key a false one (distinct keys); recall over the ten
 *   jumps; detection latency from the jump to the promotion;
 * - top-K mode against the exact top k of every second: precision = hot keys that are in the
 *   exact top k, recall = the exact top k that are hot (averaged over 1 s samples).
 */
import { AccessWindow } from '../../sdk/src/counting/window.ts';
import { RuleSet, localThreshold, parseRules } from '../../sdk/src/rules.ts';
import { Aggregator } from '../../hub/src/core/aggregate/aggregator.ts';
import { reporterBit } from '../../hub/src/core/aggregate/reporter-count.ts';
import { benchMain, percentile, type BenchRow } from './harness.ts';
import { mulberry32, ZipfSampler } from './zipf.ts';

const INSTANCES = 10;
const FLUSH_MS = 100;
const TICK_MS = 100;
const STEP_MS = 10;
const WARMUP_MS = 30_000;
const JUMPS = 10;
const JUMP_BASE = 10;
const JUMP_MS = 15_000;
const BUSY = 10;
const K = 10;

interface Trace {
  names: string[];
  ids: Int32Array;
  times: Float64Array;
  instances: Uint8Array;
  durationMs: number;
  /** surge start of jump:i */
  jumpAt: number[];
}

function diurnal(t: number, durationMs: number): number {
  return 1 - 0.8 * Math.cos((2 * Math.PI * t) / durationMs);
}

function buildTrace(durationMs: number, backgroundRate: number): Trace {
  const random = mulberry32(14);
  const zipf = new ZipfSampler({ n: 20_000, s: 1.0, seed: 7 });
  const names: string[] = [];
  for (let i = 0; i < zipf.n; i++) names.push(`bg:${i}`);
  const busyBase = names.length;
  for (let i = 0; i < BUSY; i++) names.push(`busy:${i}`);
  const jumpBase = names.length;
  for (let i = 0; i < JUMPS; i++) names.push(`jump:${i}`);
  const gap = (durationMs - WARMUP_MS - 10_000 - JUMP_MS) / JUMPS;
  const jumpAt = Array.from({ length: JUMPS }, (_, i) => WARMUP_MS + 10_000 + Math.round(i * gap));
  const ids: number[] = [];
  const times: number[] = [];
  // accesses in a step: expected value, rounded at random (unbiased)
  const draw = (rate: number) => {
    const x = (rate * STEP_MS) / 1000;
    return Math.floor(x) + (random() < x - Math.floor(x) ? 1 : 0);
  };
  for (let t = 0; t < durationMs; t += STEP_MS) {
    const d = diurnal(t, durationMs);
    const emit = (id: number) => {
      ids.push(id);
      times.push(t + random() * STEP_MS);
    };
    for (let n = draw(backgroundRate * d); n > 0; n--) emit(zipf.next());
    for (let i = 0; i < BUSY; i++) for (let n = draw((300 + 60 * i) * d); n > 0; n--) emit(busyBase + i);
    for (let i = 0; i < JUMPS; i++) {
      const surging = t >= jumpAt[i]! && t < jumpAt[i]! + JUMP_MS;
      for (let n = draw(JUMP_BASE * (surging ? 20 : 1)); n > 0; n--) emit(jumpBase + i);
    }
  }
  // within a step the order is shuffled by time
  const order = Array.from(times.keys()).sort((a, b) => times[a]! - times[b]!);
  const instances = new Uint8Array(order.length);
  for (let i = 0; i < instances.length; i++) instances[i] = Math.floor(random() * INSTANCES);
  return {
    names,
    ids: Int32Array.from(order, (i) => ids[i]!),
    times: Float64Array.from(order, (i) => times[i]!),
    instances,
    durationMs,
    jumpAt,
  };
}

interface Run {
  /** first promotion time per key (after the warm-up), every promotion listed */
  promotions: { key: string; at: number }[];
  /** top-K grading: per 1 s sample */
  topk?: { precision: number; recall: number }[];
  reported: number;
}

function simulate(trace: Trace, rule: unknown, sampleRate: number): Run {
  const rules = parseRules([rule]);
  const ruleSet = new RuleSet(rules);
  const local = [localThreshold(rules[0]!, INSTANCES)];
  const promotions: { key: string; at: number }[] = [];
  let clock = 0;
  const aggregator = new Aggregator({
    rules,
    now: 0,
    listener: { promote: (key) => promotions.push({ key, at: clock }), demote: () => undefined },
    random: mulberry32(5),
  });
  const windows = Array.from({ length: INSTANCES }, () => new AccessWindow({ rules: ruleSet, now: 0, sampleRate }));
  const bits = Array.from({ length: INSTANCES }, (_, i) => reporterBit(`instance-${i}`));
  const nextFlush = Array.from({ length: INSTANCES }, (_, i) => ((i + 1) * FLUSH_MS) / INSTANCES);
  let nextTick = TICK_MS;
  let reported = 0;
  const isTopk = rules[0]!.mode === 'topk';
  const exact = new Map<string, number>(); // this second's exact counts (top-K truth)
  let nextSample = 1000;
  const samples: { precision: number; recall: number }[] = [];

  const until = (t: number) => {
    for (;;) {
      let who = -1;
      let when = Math.min(nextTick <= t ? nextTick : Infinity, isTopk && nextSample <= t ? nextSample : Infinity);
      for (let i = 0; i < INSTANCES; i++)
        if (nextFlush[i]! <= t && nextFlush[i]! < when) (when = nextFlush[i]!), (who = i);
      if (when === Infinity) return;
      clock = when;
      if (who >= 0) {
        const w = windows[who]!;
        w.advance(when);
        const c = w.collect(local);
        reported += c.keys.length;
        if (c.keys.length) aggregator.ingest(c.keys, c.counts, bits[who]!, when);
        nextFlush[who]! += FLUSH_MS;
      } else if (when === nextTick) {
        aggregator.tick(when);
        nextTick += TICK_MS;
      } else {
        if (when >= WARMUP_MS / 3) {
          const truth = new Set(
            [...exact]
              .sort((a, b) => b[1] - a[1])
              .slice(0, K)
              .map(([key]) => key),
          );
          const hot = aggregator.hot(when).map((v) => v.key);
          const hits = hot.filter((key) => truth.has(key)).length;
          samples.push({ precision: hot.length === 0 ? 1 : hits / hot.length, recall: hits / K });
        }
        exact.clear();
        nextSample += 1000;
      }
    }
  };
  for (let i = 0; i < trace.ids.length; i++) {
    const t = trace.times[i]!;
    until(t);
    const inst = trace.instances[i]!;
    const key = trace.names[trace.ids[i]!]!;
    windows[inst]!.advance(t);
    windows[inst]!.track(key);
    if (isTopk) exact.set(key, (exact.get(key) ?? 0) + 1);
  }
  until(trace.durationMs + 2000);
  return { promotions, reported, ...(isTopk ? { topk: samples } : {}) };
}

interface AnomalyGrade {
  precision: number;
  recall: number;
  latencies: number[];
  falseKeys: string[];
}

function gradeAnomalies(trace: Trace, run: Run): AnomalyGrade {
  const tp = new Map<string, number>();
  const fp = new Set<string>();
  // every promotion counts, warm-up included: a busy key promoted early and hot ever since is a false one
  for (const { key, at } of run.promotions) {
    const m = /^jump:(\d+)$/.exec(key);
    const start = m ? trace.jumpAt[Number(m[1])]! : NaN;
    if (m && at >= start && at <= start + JUMP_MS + 1000) {
      if (!tp.has(key)) tp.set(key, at - start);
    } else fp.add(key);
  }
  for (const key of tp.keys()) fp.delete(key);
  return {
    precision: tp.size + fp.size === 0 ? 1 : tp.size / (tp.size + fp.size),
    recall: tp.size / JUMPS,
    latencies: [...tp.values()],
    falseKeys: [...fp],
  };
}

benchMain(async ({ quick }) => {
  const durationMs = quick ? 90_000 : 180_000;
  const trace = buildTrace(durationMs, quick ? 4000 : 8000);
  const rows: BenchRow[] = [];
  const conditions = `${(trace.ids.length / 1e6).toFixed(2)}M accesses over ${durationMs / 1000} s, ${INSTANCES} instances, ${JUMPS} quiet keys jump 20× (10 → 200/s)`;

  const anomaly: { label: string; rule: unknown; rate: number }[] = [
    { label: 'fixed T=150/s', rule: { match: '*', threshold: 150 }, rate: 1 },
    { label: 'fixed T=1000/s', rule: { match: '*', threshold: 1000 }, rate: 1 },
    { label: 'baseline ×3', rule: { match: '*', mode: 'baseline', factor: 3, minQps: 50 }, rate: 1 },
    { label: 'baseline ×3, 10 % sampled', rule: { match: '*', mode: 'baseline', factor: 3, minQps: 50 }, rate: 0.1 },
    { label: 'baseline ×3, 1 % sampled', rule: { match: '*', mode: 'baseline', factor: 3, minQps: 50 }, rate: 0.01 },
    { label: 'fixed T=150/s, 1 % sampled', rule: { match: '*', threshold: 150 }, rate: 0.01 },
  ];
  for (const { label, rule, rate } of anomaly) {
    const started = performance.now();
    const run = simulate(trace, rule, rate);
    const g = gradeAnomalies(trace, run);
    const bench = `8 modes ${label}`;
    rows.push(
      {
        bench,
        metric: 'precision (anomalies)',
        ours: g.precision,
        unit: '',
        better: 'higher',
        note: `${conditions}; false: ${g.falseKeys.length} keys (${g.falseKeys.slice(0, 4).join(' ')}${g.falseKeys.length > 4 ? ' …' : ''}); ${run.reported} records reported; ${((performance.now() - started) / 1000).toFixed(1)} s to simulate`,
      },
      { bench, metric: 'recall (anomalies)', ours: g.recall, unit: '', better: 'higher' },
      {
        bench,
        metric: 'detection latency p50 / max',
        ours: g.latencies.length ? percentile(g.latencies, 50) : NaN,
        unit: 'ms',
        better: 'lower',
        note: g.latencies.length
          ? `max ${Math.round(Math.max(...g.latencies))} ms, ${g.latencies.length} detected`
          : 'none detected',
      },
    );
  }

  for (const rate of [1, 0.01]) {
    const run = simulate(trace, { match: '*', mode: 'topk', k: K, minQps: 20 }, rate);
    const samples = run.topk ?? [];
    const avg = (f: (s: { precision: number; recall: number }) => number) =>
      samples.reduce((a, s) => a + f(s), 0) / Math.max(1, samples.length);
    const bench = `8 modes top-K k=${K}${rate < 1 ? ', 1 % sampled' : ''}`;
    rows.push(
      {
        bench,
        metric: 'precision vs exact top k (1 s samples)',
        ours: avg((s) => s.precision),
        unit: '',
        better: 'higher',
        note: `${samples.length} samples; hysteresis keeps a key until it leaves the top ⌈1.5k⌉; ${run.reported} records reported`,
      },
      { bench, metric: 'recall vs exact top k', ours: avg((s) => s.recall), unit: '', better: 'higher' },
    );
  }
  return rows;
});
