import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AccessWindow } from './window.ts';
import { parseRules, RuleSet } from '../rules.ts';

function counts(w: AccessWindow): Record<string, number> {
  const c = w.collect();
  return Object.fromEntries(c.keys.map((k, i) => [k, c.counts[i]!]));
}

test("a key counts only the accesses its rule's kind selects", () => {
  const rules = new RuleSet(
    parseRules([
      { match: 'stock:*', threshold: 10, kind: 'write' },
      { match: 'both:*', threshold: 10, kind: 'any' },
      { match: '*', threshold: 10 },
    ]),
  );
  const w = new AccessWindow({ admission: 1, now: 0, rules });
  w.setThresholds([1, 1, 1]);
  for (const key of ['stock:1', 'both:1', 'page:1']) {
    for (let i = 0; i < 300; i++) w.track(key);
    for (let i = 0; i < 200; i++) w.trackWrite(key);
  }
  assert.equal(counts(w), { 'stock:1': 200, 'both:1': 500, 'page:1': 300 });
});

test('trackAt (the hit path) does not count a read of a write-only key', () => {
  const rules = new RuleSet(parseRules([{ match: 'stock:*', threshold: 10, kind: 'write' }]));
  const w = new AccessWindow({ admission: 1, now: 0, rules });
  w.setThresholds([1]);
  const slot = w.trackWrite('stock:1');
  assert.ok(slot >= 0);
  for (let i = 0; i < 100; i++) assert.ok(w.trackAt(slot, 'stock:1'));
  assert.equal(counts(w), { 'stock:1': 1 });
});

test('with only read rules a write counts nothing and takes no slot', () => {
  const w = new AccessWindow({ admission: 1, now: 0 });
  w.setThresholds([1]);
  for (let i = 0; i < 100; i++) assert.is(w.trackWrite('k'), -1);
  assert.is(w.stats().candidates, 0);
  w.track('k');
  assert.equal(counts(w), { k: 1 });
});

test('a slot admitted by an access its rule does not count is released at the next slice', () => {
  const rules = new RuleSet(parseRules([{ match: 'stock:*', threshold: 10, kind: 'write' }]));
  const w = new AccessWindow({ admission: 1, now: 0, rules, sliceMs: 100 });
  w.setThresholds([1]);
  for (let i = 0; i < 50; i++) w.track(`stock:${i}`);
  assert.is(w.stats().candidates, 50);
  assert.equal(counts(w), {});
  w.advance(100);
  assert.is(w.stats().candidates, 0);
});

test('setRules switches a candidate to its new rule kind', () => {
  const w = new AccessWindow({ admission: 1, now: 0 });
  w.setThresholds([1]);
  w.track('stock:1');
  w.setRules(new RuleSet(parseRules([{ match: 'stock:*', threshold: 10, kind: 'write' }])));
  w.setThresholds([1]);
  w.collect();
  for (let i = 0; i < 10; i++) w.track('stock:1');
  for (let i = 0; i < 5; i++) w.trackWrite('stock:1');
  assert.equal(counts(w), { 'stock:1': 5 });
});

test.run();
