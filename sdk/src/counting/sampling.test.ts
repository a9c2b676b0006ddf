import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AccessWindow } from './window.ts';
import { parseRules, RuleSet } from '../rules.ts';
import { resolveClientOptions } from '../options.ts';

function times(window: AccessWindow, key: string, n: number): void {
  for (let i = 0; i < n; i++) window.track(key);
}

test('sampleRate: reported counts are scaled by 1 / rate and stay close to the truth', () => {
  for (const rate of [0.1, 0.01]) {
    const w = new AccessWindow({ admission: 1, now: 0, sampleRate: rate });
    w.setThresholds([100]);
    times(w, 'a', 50_000);
    const c = w.collect();
    assert.equal(c.keys, ['a']);
    const err = Math.abs(c.counts[0]! - 50_000) / 50_000;
    assert.ok(err < 0.1, `rate ${rate}: reported ${c.counts[0]} for 50000 (${(err * 100).toFixed(1)} % off)`);
    assert.ok(Math.abs(w.count('a') - 50_000) / 50_000 < 0.1);
  }
});

test('sampleRate: the local threshold is judged in accesses, not in samples', () => {
  const w = new AccessWindow({ admission: 1, now: 0, sampleRate: 0.1 });
  w.setThresholds([1000]);
  times(w, 'a', 500); // ~50 sampled, under 1000 × 0.1
  assert.equal(w.collect().keys, []);
  times(w, 'a', 2000);
  assert.equal(w.collect().keys, ['a']);
});

test('sampleRate: trackAt on a remembered slot samples too, and a sampled-out access counts nothing', () => {
  const w = new AccessWindow({ admission: 1, now: 0, sampleRate: 0.25 });
  w.setThresholds([1]);
  let slot = -1;
  for (let i = 0; i < 40_000; i++) if (!w.trackAt(slot, 'a')) slot = w.track('a');
  const reported = w.collect().counts[0]!;
  assert.ok(Math.abs(reported - 40_000) / 40_000 < 0.05, `reported ${reported}`);
});

test("a rule's sampleRate lowers the rate for its keys only", () => {
  const rules = new RuleSet(
    parseRules([
      { match: 'cheap:*', threshold: 10, sampleRate: 0.05 },
      { match: '*', threshold: 10 },
    ]),
  );
  const w = new AccessWindow({ admission: 1, now: 0, rules });
  w.setThresholds([1, 1]);
  times(w, 'cheap:1', 20_000);
  times(w, 'full', 20_000);
  const c = w.collect();
  const by = Object.fromEntries(c.keys.map((k, i) => [k, c.counts[i]!]));
  assert.is(by.full, 20_000, 'unsampled rule: exact');
  assert.ok(Math.abs(by['cheap:1']! - 20_000) / 20_000 < 0.15, `sampled rule: ${by['cheap:1']}`);
  assert.ok(by['cheap:1'] !== 20_000, 'it was sampled');
});

test('sampleRate is validated: client option and rule field', () => {
  assert.throws(() => new AccessWindow({ sampleRate: 0 }), /sampleRate/);
  assert.throws(
    () =>
      resolveClientOptions(
        { app: 'a', hubs: [], sampleRate: 1.5 },
        () => 'h',
        () => 'i',
      ),
    /options\.sampleRate must be a number in \(0, 1\]/,
  );
  assert.is(
    resolveClientOptions(
      { app: 'a', hubs: [] },
      () => 'h',
      () => 'i',
    ).sampleRate,
    1,
  );
  assert.throws(
    () => parseRules([{ match: '*', threshold: 1, sampleRate: -1 }]),
    /rules\[0\]\.sampleRate: must be a number in \(0, 1\]/,
  );
});

test.run();
