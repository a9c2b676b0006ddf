import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { INITIAL_SLOTS, CounterTable } from './counter-table.ts';

const SLICES = 10;

/** Acquires a slot for `key` and gives it recognisable counts (its index + 1 in every field). */
function fill(t: CounterTable, key: string, n: number): number {
  const slot = t.acquire(key);
  assert.ok(slot >= 0, `a slot for ${key}`);
  for (let s = 0; s < SLICES; s++) t.sliceCounts[slot * SLICES + s] = n + s;
  t.totals[slot] = n;
  t.pending[slot] = n + 1;
  t.ruleOf[slot] = n % 7;
  t.threshold[slot] = n + 2;
  t.crossAt[slot] = n + 3;
  t.urgentEnd[slot] = n + 4;
  t.keep[slot] = 1 / (n + 1);
  t.kinds[slot] = n % 3;
  return slot;
}

function assertFields(t: CounterTable, key: string, n: number): void {
  const slot = t.slotOf.get(key);
  assert.ok(slot !== undefined && slot < t.capacity, `${key} has a slot inside the table`);
  assert.is(t.keys[slot], key);
  for (let s = 0; s < SLICES; s++) assert.is(t.sliceCounts[slot * SLICES + s], n + s, `${key} slice ${s}`);
  assert.is(t.totals[slot], n);
  assert.is(t.pending[slot], n + 1);
  assert.is(t.ruleOf[slot], n % 7);
  assert.is(t.threshold[slot], n + 2);
  assert.is(t.crossAt[slot], n + 3);
  assert.is(t.urgentEnd[slot], n + 4);
  assert.is(t.keep[slot], 1 / (n + 1));
  assert.is(t.kinds[slot], n % 3);
  assert.is(t.used[t.usedAt[slot]!], slot, `${key} is in the dense list`);
}

test('starts small and doubles as keys arrive, up to its bound and no further', () => {
  const t = new CounterTable(1000, SLICES);
  assert.is(t.capacity, INITIAL_SLOTS);
  const capacities = new Set<number>();
  for (let i = 0; i < 1000; i++) {
    fill(t, `k${i}`, i);
    capacities.add(t.capacity);
  }
  assert.equal([...capacities], [64, 128, 256, 512, 1000]);
  assert.is(t.sliceCounts.length, 1000 * SLICES);
  assert.is(t.hasRoom, false);
  assert.is(t.acquire('one-too-many'), -1, 'full at the bound');
  assert.is(t.capacity, 1000);
  for (let i = 0; i < 1000; i += 37) assertFields(t, `k${i}`, i);
});

test('a bound below the initial size is the size', () => {
  const t = new CounterTable(4, SLICES);
  assert.is(t.capacity, 4);
  for (let i = 0; i < 4; i++) fill(t, `k${i}`, i);
  assert.is(t.acquire('x'), -1);
});

test('compacts when sparse: survivors move down with every field, the memory comes back', () => {
  const t = new CounterTable(4096, SLICES);
  for (let i = 0; i < 4096; i++) fill(t, `k${i}`, i);
  assert.is(t.capacity, 4096);
  assert.is(t.shrinkIfSparse(), false, 'full: stays');
  // free all but every 100th key, spread over the whole table
  const kept: number[] = [];
  for (let i = 0; i < 4096; i++) {
    if (i % 100 === 0) kept.push(i);
    else t.release(t.slotOf.get(`k${i}`)!);
  }
  assert.is(t.usedCount, kept.length);
  assert.ok(t.shrinkIfSparse());
  assert.is(t.capacity, INITIAL_SLOTS * 2, '41 keys: the smallest power of two leaving them half the room');
  assert.is(t.totals.length, INITIAL_SLOTS * 2);
  for (const i of kept) assertFields(t, `k${i}`, i);
  // the freed slots of the smaller table are usable, then it grows again
  for (let i = 0; i < 200; i++) fill(t, `n${i}`, i);
  assert.is(t.capacity, 256);
  for (const i of kept) assertFields(t, `k${i}`, i);
  for (let i = 0; i < 200; i++) assertFields(t, `n${i}`, i);
  assert.is(t.slotOf.size, t.usedCount);
});

test('never shrinks below its initial size, nor while urgent slots are listed', () => {
  const t = new CounterTable(1024, SLICES);
  for (let i = 0; i < 300; i++) fill(t, `k${i}`, i);
  for (let i = 1; i < 300; i++) t.release(t.slotOf.get(`k${i}`)!);
  t.urgentCount = 1;
  assert.is(t.shrinkIfSparse(), false, 'an urgent slot is listed by number');
  t.urgentCount = 0;
  assert.ok(t.shrinkIfSparse());
  assert.is(t.capacity, INITIAL_SLOTS);
  assert.is(t.shrinkIfSparse(), false);
  assertFields(t, 'k0', 0);
  t.release(t.slotOf.get('k0')!);
  assert.is(t.usedCount, 0);
  assert.is(t.shrinkIfSparse(), false);
  assert.is(t.capacity, INITIAL_SLOTS);
});

test.run();
