import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { AckResult } from './invalidations.ts';
import { DropTracker, type DropWaiter } from './drop-tracker.ts';

const holder = (instance: string, leaseUntil = 1000): DropWaiter => ({
  instance,
  leaseUntil,
  appliedSeq: 0,
  closed: false,
  dropsSent: 0,
  dropsApplied: 0,
  dropWaits: undefined,
});

test('a write nobody holds is acked at once while another waits on a frozen holder (acks out of order)', () => {
  const t = new DropTracker();
  const frozen = holder('frozen');
  const done: [string, AckResult | undefined][] = [];
  t.track('k', [[frozen, 1]], 0, (r) => done.push(['k', r]));
  t.track('other', [], 5, (r) => done.push(['other', r]));
  assert.equal(done, [['other', { fenced: [], ms: 0 }]]);
  t.settle(999);
  assert.is(done.length, 1, 'no ack on a plain timeout');
  t.settle(1000);
  assert.equal(done[1], ['k', { fenced: ['frozen'], ms: 1000 }], 'fenced once its lease lapsed');
  assert.is(t.pending, 0);
});

test('Applied.d pops every wait it covers; a lapsed lease at tracking time is no waiter', () => {
  const t = new DropTracker();
  const a = holder('a');
  const lapsed = holder('lapsed', 0);
  const done: (AckResult | undefined)[] = [];
  t.track('k1', [[a, 1]], 10, (r) => done.push(r));
  t.track(
    'k2',
    [
      [a, 2],
      [lapsed, 1],
    ],
    20,
    (r) => done.push(r),
  );
  t.applied(a, 1, 30);
  assert.equal(done, [{ fenced: [], ms: 20 }]);
  t.applied(a, 2, 40);
  assert.equal(done[1], { fenced: [], ms: 20 });
});

test('renewal block: a holder lagging behind a Drop older than graceMs gets no lease', () => {
  const t = new DropTracker({ graceMs: 250 });
  const a = holder('a');
  t.track('k', [[a, 1]], 0, () => {});
  assert.not.ok(t.blocks(a, 249));
  assert.ok(t.blocks(a, 250));
  t.applied(a, 1, 260);
  assert.not.ok(t.blocks(a, 300));
});

test('a write flood: a later write waits for the Drop outstanding, cleared once applied', () => {
  const t = new DropTracker();
  const a = holder('a');
  t.sent(a, 'k', 1);
  t.track('k', [[a, 1]], 0, () => {});
  assert.equal([...t.outstanding('k')!], [[a, 1]]);
  const later: (AckResult | undefined)[] = [];
  t.track('k', [...t.outstanding('k')!], 5, (r) => later.push(r));
  assert.equal(later, []);
  t.applied(a, 1, 9);
  assert.equal(later, [{ fenced: [], ms: 4 }]);
  assert.is(t.outstanding('k'), undefined);
});

test('nothing is acked before notBefore; shutdown drops what is pending unacknowledged', () => {
  const t = new DropTracker({ notBefore: 100 });
  const done: (AckResult | undefined)[] = [];
  t.track('k', [], 10, (r) => done.push(r));
  assert.equal(done, []);
  t.settle(100);
  assert.equal(done, [{ fenced: [], ms: 90 }]);
  const a = holder('a');
  t.track('k', [[a, 1]], 110, (r) => done.push(r));
  t.flush();
  assert.equal(done[1], undefined);
  assert.is(done.length, 2);
  assert.is(t.dropped, 1);
});

test('bounded: past maxPending a new one is dropped unacknowledged', () => {
  const t = new DropTracker({ maxPending: 1 });
  const a = holder('a');
  const done: (AckResult | undefined)[] = [];
  t.track('k1', [[a, 1]], 0, (r) => done.push(r));
  t.track('k2', [[a, 2]], 0, (r) => done.push(r));
  assert.equal(done, [undefined]);
  assert.is(t.pending, 1);
});

test.run();
