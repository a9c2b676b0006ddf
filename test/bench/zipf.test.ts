// The trace generator and oracle grade every accuracy figure, so they are checked against their
// laws here: `node --import tsx test/bench/zipf.test.ts`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ExactOracle, ZipfSampler, generateTrace, mulberry32 } from './zipf.ts';
import { measureNsPerOp, percentile } from './harness.ts';

test('mulberry32 is deterministic per seed and uniform enough', () => {
  const a = mulberry32(42);
  const b = mulberry32(42);
  const c = mulberry32(43);
  const xs = Array.from({ length: 5 }, a);
  assert.equal(xs, Array.from({ length: 5 }, b));
  assert.not.equal(xs, Array.from({ length: 5 }, c));
  const r = mulberry32(7);
  let sum = 0;
  for (let i = 0; i < 100_000; i++) sum += r();
  assert.ok(Math.abs(sum / 100_000 - 0.5) < 0.01);
});

test('Zipf sampler frequencies follow 1/k^s', () => {
  for (const s of [0.9, 1.1, 1.3]) {
    const z = new ZipfSampler({ n: 1000, s, seed: 3 });
    const counts = new Uint32Array(1000);
    const draws = 400_000;
    for (let i = 0; i < draws; i++) counts[z.next()]!++;
    // rank 1 vs rank 2 ratio is 2^s; top ranks have enough draws for a 5% check
    const ratio = counts[0]! / counts[1]!;
    assert.ok(Math.abs(ratio - 2 ** s) / 2 ** s < 0.05, `s=${s} ratio ${ratio}`);
    assert.ok(Math.abs(counts[0]! / draws - z.probability(0)) < 0.01);
  }
});

test('trace is time-ordered, deterministic, and flash keys hit their exact rate', () => {
  const opts = {
    keys: 10_000,
    s: 1.1,
    rate: 50_000,
    durationMs: 2000,
    seed: 9,
    flash: [{ key: 'flash:a', rate: 1200, startMs: 500, endMs: 1500 }],
  };
  const t1 = generateTrace(opts);
  const t2 = generateTrace(opts);
  assert.equal(Array.from(t1.ids.subarray(0, 100)), Array.from(t2.ids.subarray(0, 100)));
  for (let i = 1; i < t1.times.length; i++) assert.ok(t1.times[i]! >= t1.times[i - 1]!);
  assert.is(t1.times.length, 100_000 + 1200);
  const oracle = new ExactOracle(t1, 1000);
  assert.is(oracle.maxWindowCount('flash:a'), 1200);
  assert.is(oracle.maxWindowCount('absent'), 0);
});

test('oracle grades precision, recall and the 0.8/1.2 bounds', () => {
  const trace = generateTrace({
    keys: 100,
    s: 0,
    rate: 100,
    durationMs: 1000,
    flash: [
      { key: 'hot', rate: 130 },
      { key: 'edge', rate: 100 },
      { key: 'cold', rate: 70 },
    ],
  });
  const oracle = new ExactOracle(trace, 1000);
  assert.equal(oracle.keysAtLeast(100).sort(), ['edge', 'hot']);
  const perfect = oracle.grade(['hot', 'edge'], 100);
  assert.is(perfect.precision, 1);
  assert.is(perfect.recall, 1);
  const bad = oracle.grade(['cold'], 100);
  assert.is(bad.precision, 0);
  assert.is(bad.recall, 0);
  assert.is(bad.missedClear, 1);
  assert.is(bad.falseClear, 1);
});

test('percentile by nearest rank; ns/op measures a loop', () => {
  assert.is(percentile([5, 1, 4, 2, 3], 50), 3);
  assert.is(percentile([5, 1, 4, 2, 3], 100), 5);
  assert.is(percentile([5, 1, 4, 2, 3], 1), 1);
  assert.ok(Number.isNaN(percentile([], 50)));
  const m = new Map([['a', 1]]);
  const r = measureNsPerOp(
    (n) => {
      let s = 0;
      for (let i = 0; i < n; i++) s += m.get('a')!;
      return s;
    },
    { warmupMs: 20, rounds: 3, roundMs: 10 },
  );
  assert.ok(r.median > 0 && r.median < 1000, `median ${r.median}`);
  assert.is(r.rounds.length, 3);
});

test.run();
