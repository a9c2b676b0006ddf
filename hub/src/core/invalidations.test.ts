import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { InvalidationTracker, type Waiter } from './invalidations.ts';

const waiter = (appliedSeq = 0): Waiter => ({ appliedSeq, closed: false });

test('acks once every waiter applied, in seq order', () => {
  const t = new InvalidationTracker({ timeoutMs: 1000 });
  const a = waiter();
  const b = waiter();
  const done: [number, boolean][] = [];
  t.track(1, [a, b], 0, (to) => done.push([1, to]));
  t.track(2, [a, b], 0, (to) => done.push([2, to]));
  a.appliedSeq = 2;
  t.settle();
  assert.equal(done, []);
  b.appliedSeq = 1;
  t.settle();
  assert.equal(done, [[1, false]]);
  b.appliedSeq = 2;
  t.settle();
  assert.equal(done, [
    [1, false],
    [2, false],
  ]);
  assert.is(t.pending, 0);
});

test('closed waiters no longer hold an ack; an empty waiter list acks at once', () => {
  const t = new InvalidationTracker();
  const a = waiter();
  let acked = 0;
  t.track(1, [a], 0, () => acked++);
  a.closed = true;
  t.settle();
  assert.is(acked, 1);
  t.track(2, [], 0, () => acked++);
  assert.is(acked, 2);
});

test('expire acks overdue entries as timed out, with the injected clock', () => {
  const t = new InvalidationTracker({ timeoutMs: 1000 });
  const a = waiter();
  const out: boolean[] = [];
  t.track(1, [a], 0, (to) => out.push(to));
  t.track(2, [a], 500, (to) => out.push(to));
  t.expire(999);
  assert.equal(out, []);
  t.expire(1000);
  assert.equal(out, [true]);
  t.expire(1500);
  assert.equal(out, [true, true]);
});

test('bounded: beyond maxPending the oldest is acked early; a throwing callback does not stop others', () => {
  const t = new InvalidationTracker({ maxPending: 3 });
  const a = waiter();
  const out: number[] = [];
  for (let i = 1; i <= 5; i++) {
    t.track(i, [a], 0, () => {
      out.push(i);
      if (i === 1) throw new Error('requester gone');
    });
  }
  assert.equal(out, [1, 2]);
  assert.is(t.pending, 3);
  t.flush();
  assert.equal(out, [1, 2, 3, 4, 5]);
});

test('20k pending invalidations x 200 waiters all settle when the waiters catch up', () => {
  const t = new InvalidationTracker({ maxPending: 1_000_000 });
  const waiters = Array.from({ length: 200 }, () => waiter());
  let acked = 0;
  for (let seq = 1; seq <= 20_000; seq++) t.track(seq, waiters, 0, () => acked++);
  for (const w of waiters) {
    w.appliedSeq = 20_000;
    t.settle();
  }
  assert.is(acked, 20_000);
});

test.run();
