import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROLL_MS, Savings } from './savings.ts';

test('sums become per-key rates once a period passed; keys no longer hot go', () => {
  const savings = new Savings(0);
  savings.add('a', 90, 10);
  savings.add('a', 9, 1);
  savings.add('b', 0, 0);
  savings.add('gone', 50, 0);
  savings.roll(ROLL_MS - 1, () => true);
  assert.is(savings.of('a'), undefined, 'no rate before a whole period');
  savings.roll(2 * ROLL_MS, (key) => key !== 'gone');
  assert.equal(savings.of('a'), { localPct: 90, loadsPerSec: 5.5 });
  assert.equal(savings.of('b'), { localPct: 0, loadsPerSec: 0 });
  assert.is(savings.of('gone'), undefined);
  assert.is(savings.sparedPerSec, 49.5);
  savings.roll(3 * ROLL_MS, () => true);
  assert.is(savings.of('a'), undefined, 'a period without reports: no rate');
  assert.is(savings.sparedPerSec, 0);
});

test.run();
