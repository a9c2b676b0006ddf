import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseRules, RuleSet } from '../../rules.ts';
import { BURST_SECONDS, RateLimits } from './rate-limits.ts';

const rules = new RuleSet(
  parseRules([
    { match: 'api:*', threshold: 1000, limit: 100 },
    { match: 'free', threshold: 10 },
  ]),
);

/** tokens taken at `rate` calls per second for `seconds` (time is a number, no clock) */
function admitted(limits: RateLimits, key: string, callsPerSecond: number, seconds: number, start = 0): number {
  let n = 0;
  const step = 1000 / callsPerSecond;
  for (let t = start; t < start + seconds * 1000; t += step) if (limits.take(key, t)) n++;
  return n;
}

test('before any split: limit / instances; keys without a limit always pass', () => {
  const limits = new RateLimits(100);
  assert.ok(!limits.active);
  assert.ok(limits.take('api:x', 0), 'no rules yet: no limit');
  limits.configure(rules, 4);
  assert.ok(limits.active);
  assert.is(limits.rateOf('api:x', 0), 25);
  assert.is(limits.rateOf('free', 0), Number.POSITIVE_INFINITY);
  const n = admitted(limits, 'api:x', 1000, 10);
  // 25/s for 10 s, plus the first burst
  assert.ok(n >= 250 && n <= 250 + 25 * BURST_SECONDS + 1, `admitted ${n}`);
  assert.is(admitted(limits, 'free', 1000, 1), 1000);
});

test("the hub's split replaces the even split until it lapses", () => {
  const limits = new RateLimits(100);
  limits.configure(rules, 4);
  limits.setSplits(['api:x'], [70], 3000, 0);
  assert.is(limits.rateOf('api:x', 10), 70);
  const n = admitted(limits, 'api:x', 1000, 2);
  assert.ok(n >= 140 && n <= 148, `admitted ${n}`);
  assert.is(limits.rateOf('api:x', 3001), 25, 'lapsed: back to limit / instances');
});

test('buckets and splits stay bounded under any key cardinality', () => {
  const limits = new RateLimits(50);
  limits.configure(rules, 1);
  for (let i = 0; i < 10_000; i++) {
    limits.take(`api:${i}`, i);
    limits.setSplits([`api:${i}`], [1], 1000, i);
  }
  // the newest keys are still known, with their split
  assert.is(limits.rateOf('api:9999', 9999), 1);
  assert.is(limits.rateOf('api:0', 9999), 100, 'an evicted split falls back to the split');
});

test.run();
