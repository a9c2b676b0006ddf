import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseRules } from '@hotkey/sdk/rules';
import { ReplicaSteps } from './replica-steps.ts';

const [rule, cached] = parseRules([
  { match: 'a', threshold: 10, cache: false, replicas: { perNodeQps: 1000, factor: 1, max: 4 } },
  { match: 'b', threshold: 10 },
]);

test('a promotion starts at replicaCount; cached keys never get copies', () => {
  const steps = new ReplicaSteps();
  assert.is(steps.start('a', rule!, 2500), 3);
  assert.is(steps.count('a'), 3);
  assert.is(steps.start('b', cached!, 1e6), 1);
  assert.is(steps.count('b'), 1);
});

test('up at once, down only past the margin, forgotten on demotion', () => {
  const steps = new ReplicaSteps();
  steps.start('a', rule!, 1500); // 2
  assert.is(steps.update('a', rule!, 1900), undefined, 'same step');
  assert.is(steps.update('a', rule!, 2100), 3, 'up a step at once');
  assert.is(steps.update('a', rule!, 1900), undefined, 'just under the step: kept (hysteresis)');
  assert.is(steps.update('a', rule!, 1500), 2, '1500 × 1.25 is under 2000: down');
  assert.is(steps.update('a', rule!, 99_999), 4, 'capped at max');
  assert.is(steps.update('a', rule!, 0), 1);
  steps.start('a', rule!, 3000);
  steps.forget('a');
  assert.is(steps.count('a'), 1);
});

test.run();
