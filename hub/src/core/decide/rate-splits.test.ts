import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseRules } from '@hotkey/sdk/rules';
import { RateSplits, PERIOD_MS, waterFill } from './rate-splits.ts';

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

test('waterFill: shares sum to the limit; light users get what they use, heavy ones split the rest', () => {
  const shares = waterFill(1000, [10, 20, 5000, 5000]);
  assert.ok(Math.abs(sum(shares) - 1000) < 1e-9);
  assert.ok(shares[0]! >= 10 && shares[0]! < 11);
  assert.ok(shares[1]! >= 20 && shares[1]! < 22);
  assert.ok(Math.abs(shares[2]! - shares[3]!) < 1e-9);
  // admitted = what each uses of its share = the limit, less the light users' headroom
  const admitted = [10, 20, 5000, 5000].reduce((a, d, i) => a + Math.min(d, shares[i]!), 0);
  assert.ok(admitted > 990 && admitted <= 1000, `admitted ${admitted}`);
  const idle = waterFill(1000, [1, 1]);
  assert.ok(Math.abs(sum(idle) - 1000) < 1e-9 && Math.abs(idle[0]! - 500) < 1e-9, 'unused capacity spread evenly');
  assert.equal(waterFill(1000, []), []);
});

test('shares follow reported demand, leave with closed sessions, and resend only on change or renewal', () => {
  const limits = new RateSplits<{ closed: boolean; name: string }>(
    parseRules([{ match: 'api:*', threshold: 1e6, limit: 300 }]),
  );
  const a = { closed: false, name: 'a' };
  const b = { closed: false, name: 'b' };
  const sent: { to: string; keys: string[]; rates: number[] }[] = [];
  const send = (s: { name: string }, keys: string[], rates: number[]) => sent.push({ to: s.name, keys, rates });
  let now = 0;
  limits.tick(now, send); // the first period starts
  for (let p = 0; p < 10; p++) {
    // a: 1000/s, b: 50/s, plus a key no rule limits
    limits.observe(a, ['api:x', 'other'], [1000 * (PERIOD_MS / 1000), 5], 0, 2, now);
    limits.observe(b, ['api:x'], [50 * (PERIOD_MS / 1000)], 0, 1, now);
    now += PERIOD_MS;
    limits.tick(now, send);
  }
  assert.is(limits.size, 1);
  const last = (to: string) => sent.filter((s) => s.to === to).at(-1)!;
  assert.ok(Math.abs(last('b').rates[0]! - 52.5) < 1, `b gets what it uses: ${last('b').rates[0]}`);
  assert.ok(Math.abs(last('a').rates[0]! - 247.5) < 1, `a gets the rest: ${last('a').rates[0]}`);
  const before = sent.length;
  b.closed = true;
  limits.observe(a, ['api:x'], [200], 0, 1, now);
  now += PERIOD_MS;
  limits.tick(now, send);
  assert.is(sent.length, before + 1, 'only a hears: its share changed');
  assert.is(last('a').rates[0], 300);
  // steady demand: nothing new until the renewal is due
  const steady = sent.length;
  limits.observe(a, ['api:x'], [200], 0, 1, now);
  now += PERIOD_MS;
  limits.tick(now, send);
  assert.is(sent.length, steady);
});

test('limited keys per app are capped; refused ones are counted', () => {
  const limits = new RateSplits<{ closed: boolean }>(parseRules([{ match: '*', threshold: 1e6, limit: 10 }]), 100);
  const s = { closed: false };
  const keys = Array.from({ length: 1000 }, (_, i) => `k${i}`);
  limits.observe(
    s,
    keys,
    keys.map(() => 1),
    0,
    keys.length,
    0,
  );
  assert.is(limits.size, 100);
  assert.is(limits.refused, 900);
});

test.run();
