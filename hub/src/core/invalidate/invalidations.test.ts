import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { InvalidationTracker, type AckResult, type Waiter } from './invalidations.ts';

/** a session with a lease until `leaseUntil` (hub clock) */
const waiter = (instance: string, leaseUntil = 1000, appliedSeq = 0): Waiter => ({ appliedSeq, leaseUntil, instance });

test('acks once every waiter applied, in seq order, naming nobody as fenced', () => {
  const t = new InvalidationTracker();
  const a = waiter('a');
  const b = waiter('b');
  const done: [number, AckResult | undefined][] = [];
  t.track(1, [a, b], 0, (r) => done.push([1, r]));
  t.track(2, [a, b], 0, (r) => done.push([2, r]));
  a.appliedSeq = 2;
  t.settle(10);
  assert.equal(done, []);
  b.appliedSeq = 1;
  t.settle(20);
  assert.equal(done, [[1, { fenced: [], ms: 20 }]]);
  b.appliedSeq = 2;
  t.settle(30);
  assert.equal(done, [
    [1, { fenced: [], ms: 20 }],
    [2, { fenced: [], ms: 30 }],
  ]);
  assert.is(t.pending, 0);
});

test('a waiter that never applies is fenced once its lease lapsed, not before; no ack on a plain timeout', () => {
  const t = new InvalidationTracker();
  const a = waiter('a', 1000);
  const silent = waiter('silent', 1500);
  const out: (AckResult | undefined)[] = [];
  t.track(1, [a, silent], 100, (r) => out.push(r));
  a.appliedSeq = 1;
  t.settle(1499);
  assert.equal(out, [], 'the silent lease still runs: no ack');
  t.settle(1500);
  assert.equal(out, [{ fenced: ['silent'], ms: 1400 }]);
});

test('a waiter never granted a lease holds nothing up and is not named; an empty list acks at once', () => {
  const t = new InvalidationTracker();
  const out: (AckResult | undefined)[] = [];
  t.track(1, [waiter('x', 0)], 5, (r) => out.push(r));
  t.track(2, [], 5, (r) => out.push(r));
  assert.equal(out, [
    { fenced: [], ms: 0 },
    { fenced: [], ms: 0 },
  ]);
});

test('a waiter whose lease had lapsed when the invalidation was tracked holds nothing up and is not named; one that lapses after is', () => {
  const t = new InvalidationTracker();
  const out: (AckResult | undefined)[] = [];
  // an instance that let its lease go (it held nothing), and one whose lease runs past the broadcast
  const idle = waiter('idle', 50);
  const frozen = waiter('frozen', 300);
  t.track(1, [idle, frozen], 100, (r) => out.push(r));
  t.settle(299);
  assert.equal(out, [], 'the current lease still runs');
  t.settle(300);
  assert.equal(out, [{ fenced: ['frozen'], ms: 200 }]);
});

test('notBefore: a restarted hub acks nothing until one lease after its start, even with every waiter applied', () => {
  const t = new InvalidationTracker({ notBefore: 2000 });
  const out: (AckResult | undefined)[] = [];
  t.track(1, [], 10, (r) => out.push(r));
  t.settle(1999);
  assert.equal(out, []);
  t.settle(2000);
  assert.equal(out, [{ fenced: [], ms: 1990 }]);
});

test('blocks: no lease renewal for a session lagging behind an invalidation older than graceMs (any pending one, not only the oldest)', () => {
  const t = new InvalidationTracker({ graceMs: 250 });
  const a = waiter('a', 1e9);
  assert.not.ok(t.blocks(0, 0), 'nothing pending');
  t.track(3, [a], 0, () => {});
  assert.not.ok(t.blocks(2, 249), 'a fresh invalidation: a healthy session is just a round trip behind');
  assert.ok(t.blocks(2, 250));
  assert.not.ok(t.blocks(3, 1000), 'applied');
  t.track(5, [a], 900, () => {});
  assert.not.ok(t.blocks(3, 1000), 'behind only a fresh one');
  assert.ok(t.blocks(3, 1150), 'behind the second, which is old now, though the first is applied');
  a.appliedSeq = 5;
  t.settle(1200);
  assert.not.ok(t.blocks(0, 5000), 'all acked');
});

test('one instance fenced through two sessions is named once', () => {
  const t = new InvalidationTracker();
  const out: (AckResult | undefined)[] = [];
  t.track(1, [waiter('i', 10), waiter('i', 20)], 0, (r) => out.push(r));
  t.settle(20);
  assert.equal(out, [{ fenced: ['i'], ms: 20 }]);
});

test('bounded: beyond maxPending the oldest is dropped without an ack; flush drops the rest; a throwing callback does not stop others', () => {
  const t = new InvalidationTracker({ maxPending: 3 });
  const a = waiter('a', 1000);
  const out: [number, AckResult | undefined][] = [];
  for (let i = 1; i <= 5; i++) {
    t.track(i, [a], 0, (r) => {
      out.push([i, r]);
      if (i === 1) throw new Error('requester gone');
    });
  }
  assert.equal(out, [
    [1, undefined],
    [2, undefined],
  ]);
  assert.is(t.pending, 3);
  t.flush();
  assert.equal(
    out.map(([i, r]) => [i, r]),
    [1, 2, 3, 4, 5].map((i) => [i, undefined]),
  );
  assert.is(t.dropped, 5);
});

test('20k pending invalidations x 200 waiters all settle when the waiters catch up', () => {
  const t = new InvalidationTracker({ maxPending: 1_000_000 });
  const waiters = Array.from({ length: 200 }, (_, i) => waiter(`w${i}`, 1e9));
  let acked = 0;
  for (let seq = 1; seq <= 20_000; seq++) t.track(seq, waiters, 0, () => acked++);
  for (const w of waiters) {
    w.appliedSeq = 20_000;
    t.settle(1);
  }
  assert.is(acked, 20_000);
});

test.run();
