import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseRules, type Rule } from '@hotkey/sdk/rules';
import { Aggregator, type DemoteReason } from '../../aggregate/aggregator.ts';
import { SpaceSaving } from './topk.ts';

function setup(rules: unknown, now = 0) {
  const promotes: { key: string; rule: Rule; at: number }[] = [];
  const demotes: { key: string; reason: DemoteReason }[] = [];
  let clock = now;
  const agg = new Aggregator({
    rules: parseRules(rules),
    now,
    listener: {
      promote: (key, rule) => promotes.push({ key, rule, at: clock }),
      demote: (key, _qps, reason) => demotes.push({ key, reason }),
    },
  });
  return { agg, promotes, demotes, setClock: (t: number) => (clock = t) };
}

/** `rates[key]` accesses per second, reported every 100 ms, ticking every 100 ms, from `from` to `to`. */
function drive(s: ReturnType<typeof setup>, rates: Record<string, number>, from: number, to: number): void {
  for (let t = from; t < to; t += 100) {
    s.setClock(t);
    const keys = Object.keys(rates);
    s.agg.ingest(
      keys,
      keys.map((k) => Math.round(rates[k]! / 10)),
      0,
      t,
    );
    s.agg.tick(t);
  }
}

const BASELINE = { match: 'item:*', mode: 'baseline', factor: 3, minQps: 50, baselineWindows: 10 };

test('baseline: a quiet key that jumps 20x is promoted; a constantly busy key is not', () => {
  const s = setup([BASELINE]);
  drive(s, { 'item:quiet': 40, 'item:busy': 5000 }, 0, 30_000); // warm-up (10 windows) then 20 s of normal
  assert.equal(s.promotes, [], 'nothing promoted at steady rates, whatever their size');
  drive(s, { 'item:quiet': 800, 'item:busy': 5000 }, 30_000, 32_000);
  assert.equal(
    s.promotes.map((p) => p.key),
    ['item:quiet'],
  );
  const at = s.promotes[0]!.at;
  assert.ok(at - 30_000 <= 300, `detected ${at - 30_000} ms after the jump`);
});

test('baseline: a key first reported after the warm-up starts from the report floor (its prior)', () => {
  const s = setup([BASELINE]);
  drive(s, { 'item:a': 100 }, 0, 15_000);
  // never reported before: below 0.2 × floor (10/s) everywhere; at 60/s it is over the floor and 6x its bound
  drive(s, { 'item:a': 100, 'item:new': 60 }, 15_000, 16_000);
  assert.equal(
    s.promotes.map((p) => p.key),
    ['item:new'],
  );
});

test('baseline: during the warm-up a busy key seeds its baseline instead of being promoted', () => {
  const s = setup([BASELINE], 250); // the hub starts mid-window
  drive(s, { 'item:busy': 3000 }, 250, 20_000);
  assert.equal(s.promotes, []);
});

test('baseline: the floor holds (minQps), the baseline freezes while hot, and demotion uses the hysteresis', () => {
  const s = setup([{ ...BASELINE, demoteWindows: 2 }]);
  drive(s, { 'item:k': 2 }, 0, 12_000);
  drive(s, { 'item:k': 40 }, 12_000, 14_000); // 20x, but under minQps 50
  assert.equal(s.promotes, []);
  drive(s, { 'item:k': 10 }, 14_000, 26_000);
  drive(s, { 'item:k': 400 }, 26_000, 60_000); // hot for 34 s: the baseline must not learn it
  assert.is(s.promotes.length, 1);
  assert.equal(s.demotes, []);
  drive(s, { 'item:k': 10 }, 60_000, 64_000);
  assert.equal(
    s.demotes.map((d) => d.reason),
    ['cooled'],
  );
});

test('baseline: sigma branch promotes a smaller jump of a steady key', () => {
  const s = setup([{ ...BASELINE, factor: 10, sigma: 3 }]);
  drive(s, { 'item:k': 1000 }, 0, 20_000);
  assert.equal(s.promotes, []);
  drive(s, { 'item:k': 1400 }, 20_000, 21_000); // +40 %: far over mean + 3σ (σ ≥ √1000 ≈ 32), under 10x
  assert.equal(
    s.promotes.map((p) => p.key),
    ['item:k'],
  );
});

test('topk: the k busiest keys are hot; a key leaves only out of the top 1.5k (or under the floor)', () => {
  const s = setup([{ match: '*', mode: 'topk', k: 2, minQps: 10, demoteWindows: 1 }]);
  drive(s, { a: 1000, b: 900, c: 500, d: 100, e: 5 }, 0, 5000);
  assert.equal([...new Set(s.promotes.map((p) => p.key))].sort(), ['a', 'b']);
  // c overtakes b: c enters; b is third (within 1.5k = 3) and stays
  drive(s, { a: 1000, b: 600, c: 800, d: 100, e: 5 }, 5000, 15_000);
  assert.equal([...new Set(s.promotes.map((p) => p.key))].sort(), ['a', 'b', 'c']);
  assert.equal(s.demotes, []);
  // b falls to fourth: it leaves
  drive(s, { a: 1000, b: 50, c: 800, d: 300, e: 5 }, 15_000, 25_000);
  assert.equal(
    s.demotes.map((d) => d.key),
    ['b'],
  );
  assert.ok(s.agg.stats.hot <= 3);
});

test('topk: a landmark rescale between ticks does not let a smaller key in', () => {
  const s = setup([{ match: '*', mode: 'topk', k: 1, minQps: 1, windowMs: 100 }]);
  drive(s, { a: 1000 }, 0, 2950); // τ = 100 ms: the landmark moves every 3 s
  assert.equal(
    s.promotes.map((p) => p.key),
    ['a'],
  );
  for (let t = 2950; t < 6000; t += 50) {
    s.setClock(t);
    s.agg.ingest(['a', 'b'], [100, 20], 0, t); // b's entry check may run right after a rescale
    if (t % 100 === 0) s.agg.tick(t);
  }
  assert.equal(
    s.promotes.map((p) => p.key),
    ['a'],
  );
});

test('topk: the floor keeps quiet keys cold even when they are the top k', () => {
  const s = setup([{ match: '*', mode: 'topk', k: 5, minQps: 100 }]);
  drive(s, { a: 50, b: 20 }, 0, 5000);
  assert.equal(s.promotes, []);
});

test('SpaceSaving: bounded, finds the heavy hitters of a skewed stream, counts within their error', () => {
  const ss = new SpaceSaving(20, 1e12, 0);
  const truth = new Map<string, number>();
  let x = 1;
  for (let i = 0; i < 20_000; i++) {
    x = (x * 48271) % 2147483647;
    const key = i % 4 === 0 ? `heavy${i % 3}` : `k${x % 5000}`;
    truth.set(key, (truth.get(key) ?? 0) + 1);
    ss.add(key, 1, 0);
  }
  assert.is(ss.size, 20);
  const top = ss
    .top(3, 0)
    .map((e) => e.key)
    .sort();
  assert.equal(top, ['heavy0', 'heavy1', 'heavy2']);
  for (const key of top) {
    const e = ss.estimate(key, 0)!;
    assert.ok(e.count - e.error <= truth.get(key)! && truth.get(key)! <= e.count + 1e-6);
  }
});

test('SpaceSaving: forward decay forgets old heavy keys and survives landmark rescales', () => {
  const ss = new SpaceSaving(8, 1000, 0);
  for (let t = 0; t < 10_000; t += 10) ss.add('old', 10, t);
  for (let t = 10_000; t < 100_000; t += 10) ss.add('new', 10, t); // 90 τ: several rescales
  const top = ss.top(2, 100_000);
  assert.is(top[0]!.key, 'new');
  assert.ok(Math.abs(top[0]!.count - 1000) < 20, `decayed count ≈ rate × τ, got ${top[0]!.count}`);
  assert.ok((ss.estimate('old', 100_000)?.count ?? 0) < 1e-6);
});

test('pre-declared: an exact key is hot at its window start with no traffic, for the whole window, then cools', () => {
  const s = setup([
    { match: 'sale:1', threshold: 1000, hotFrom: 10_000, hotUntil: 20_000, hotMs: 1000 },
    { match: 'sale:*', threshold: 1000 },
  ]);
  s.agg.tick(9_900);
  assert.equal(s.promotes, []);
  assert.ok(s.agg.transitionDue(10_000));
  assert.not.ok(s.agg.transitionDue(10_050));
  s.setClock(10_000);
  s.agg.tick(10_000);
  assert.equal(
    s.promotes.map((p) => p.key),
    ['sale:1'],
  );
  assert.is(s.promotes[0]!.rule.hotMs, 10_000, 'SDKs keep it to the window end');
  for (let t = 10_100; t < 20_000; t += 100) s.agg.tick(t);
  assert.equal(s.demotes, [], 'no traffic, yet never cooled inside the window');
  for (let t = 20_000; t < 25_000; t += 100) s.agg.tick(t);
  assert.equal(
    s.demotes.map((d) => d.reason),
    ['expired'],
  );
});

test('pre-declared: a glob window promotes any reported matching key on its first report', () => {
  const s = setup([{ match: 'sale:*', threshold: 1000, hotFrom: 1000, hotUntil: 5000 }]);
  s.agg.ingest(['sale:9'], [1], 0, 500);
  assert.equal(s.promotes, [], 'before the window: the threshold applies');
  s.agg.ingest(['sale:9', 'sale:10'], [1, 1], 0, 1500);
  assert.equal(
    s.promotes.map((p) => p.key),
    ['sale:9', 'sale:10'],
  );
});

test('rule changes keep an unchanged detector (and its baselines)', () => {
  const s = setup([BASELINE, { match: 'x', threshold: 5 }]);
  drive(s, { 'item:k': 100 }, 0, 15_000);
  s.agg.setRules(parseRules([BASELINE, { match: 'y', threshold: 5 }]), 15_000);
  drive(s, { 'item:k': 2500 }, 15_000, 16_000);
  assert.equal(
    s.promotes.map((p) => p.key),
    ['item:k'],
    'judged at once: the baseline survived the change',
  );
});

test.run();
