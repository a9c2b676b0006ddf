import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CloseCode, MsgType, type InvalidateRequest } from '@hotkey/sdk/protocol';
import { closeCodeOf } from '@hotkey/sdk/errors';
import { waitFor } from '../../../../test/support/wait.ts';
import { InvalidationBudget, type Requester } from './invalidation-budget.ts';

const req = (id: number): InvalidateRequest => ({ t: MsgType.InvalidateRequest, id, key: `k${id}` });

function setup(rate: number, burst: number, maxQueued: number, wallNow: () => number = Date.now) {
  const routed: string[] = [];
  const budget = new InvalidationBudget({
    rate,
    burst,
    maxQueued,
    wallNow,
    route: (from, r) => routed.push(`${(from as Requester & { name: string }).name}:${r.id}`),
  });
  const requester = (name: string) => ({
    name,
    closed: false,
    failed: undefined as unknown,
    fail(err: unknown) {
      this.failed = err;
    },
  });
  return { budget, routed, requester };
}

test('within the burst requests route at once; beyond it they wait and are released at the rate, in order', async () => {
  // the clock stands still while the 25 arrive (at 1000/s a slow millisecond would add a token)
  const arrival = Date.now();
  let frozen = true;
  const { budget, routed, requester } = setup(1000, 5, 100, () => (frozen ? arrival : Date.now()));
  const a = requester('a');
  for (let i = 1; i <= 25; i++) budget.request(a, req(i));
  assert.is(routed.length, 5);
  assert.is(budget.stats.queued, 20);
  frozen = false;
  await waitFor('the queue to drain at 1000/s', () => routed.length === 25, 2000);
  assert.equal(
    routed,
    Array.from({ length: 25 }, (_, i) => `a:${i + 1}`),
  );
  budget.close();
});

test('a deep queue does not starve a short one: release is round robin', async () => {
  const { budget, routed, requester } = setup(200, 1, 1000);
  const bulk = requester('bulk');
  const small = requester('small');
  for (let i = 1; i <= 100; i++) budget.request(bulk, req(i));
  budget.request(small, req(1));
  budget.request(small, req(2));
  await waitFor('the small requester served', () => routed.includes('small:2'), 2000);
  assert.ok(routed.filter((r) => r.startsWith('bulk:')).length < 10, 'small is not behind the bulk queue');
  budget.close();
});

test('past maxQueued the request is refused with HK_ERR_RATE_LIMITED / 4012; a closed requester is forgotten', () => {
  const { budget, requester } = setup(1, 1, 3);
  const a = requester('a');
  for (let i = 1; i <= 4; i++) budget.request(a, req(i)); // 1 routed, 3 queued
  try {
    budget.request(a, req(5));
    assert.unreachable('should refuse');
  } catch (err) {
    assert.is((err as { code: string }).code, 'HK_ERR_RATE_LIMITED');
    assert.is(closeCodeOf(err), CloseCode.RateLimited);
  }
  assert.is(budget.stats.refused, 1);
  budget.closed(a);
  assert.is(budget.stats.queued, 0);
  budget.close();
});

test.run();
