import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Ownership } from './ownership.ts';

const keys = Array.from({ length: 20_000 }, (_, i) => `item:${i}`);

test('owner is independent of member order', () => {
  const a = new Ownership(['h1', 'h2', 'h3']);
  const b = new Ownership(['h3', 'h1', 'h2', 'h1']);
  for (const k of keys.slice(0, 1000)) assert.is(a.owner(k), b.owner(k));
});

test('keys spread evenly over hubs', () => {
  const own = new Ownership(['h1', 'h2', 'h3']);
  const counts = new Map<string, number>();
  for (const k of keys) counts.set(own.owner(k)!, (counts.get(own.owner(k)!) ?? 0) + 1);
  for (const id of own.ids) {
    const share = (counts.get(id) ?? 0) / keys.length;
    assert.ok(share > 0.3 && share < 0.37, `${id} owns ${share}`);
  }
});

test('losing a hub moves only its own keys', () => {
  const before = new Ownership(['h1', 'h2', 'h3']);
  const after = new Ownership(['h1', 'h3']);
  let moved = 0;
  for (const k of keys) {
    const was = before.owner(k);
    if (was !== 'h2') assert.is(after.owner(k), was);
    else moved++;
  }
  assert.ok(moved > 0);
});

test('no members, one member', () => {
  assert.is(new Ownership([]).owner('k'), undefined);
  assert.is(new Ownership(['only']).owner('k'), 'only');
});

test.run();
