import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HoldResult } from '@hotkey/sdk/protocol';
import { Holders, type HolderSession } from './holders.ts';

const session = (remote = '10.0.0.1'): HolderSession => ({ remote, held: undefined });

test('a Hold is recorded when no write came after its since, Written when one did', () => {
  const h = new Holders();
  const s = session();
  assert.is(h.hold(s, 'a', 0), HoldResult.Recorded);
  h.written('b', false); // w = 1
  assert.is(h.hold(s, 'b', 0), HoldResult.Written, 'b written at 1, read under 0');
  assert.is(h.hold(s, 'b', 1), HoldResult.Recorded, 'read under the clock of that write');
  assert.is(h.hold(s, 'a', 0), HoldResult.Recorded, 'a was never written');
  assert.equal([...h.holdersOf('b')!], [s]);
  assert.is(h.size, 2, 'b counted once');
});

test('a flush and an evicted mark raise the floor: lastWrite never under-states', () => {
  const h = new Holders({ maxWriteMarks: 2 });
  h.written('a', false); // 1
  h.written('b', false); // 2
  h.written('c', false); // 3: a's mark goes, floor 1
  assert.is(h.lastWrite('a'), 1);
  assert.is(h.lastWrite('zzz'), 1, 'an unmarked key reads the floor');
  assert.is(h.lastWrite('c'), 3);
  h.written('ns', true); // 4
  assert.is(h.lastWrite('c'), 4);
  assert.is(h.hold(session(), 'c', 3), HoldResult.Written);
});

test('bounds: per session and per address refused OverShare, per app Full, a key not owned NotOwner; each counted', () => {
  const refused = { share: 0, owner: 0, full: 0 };
  const h = new Holders({ maxPerSession: 2, maxPerAddress: 3, maxPerApp: 4, owns: (k) => !k.startsWith('x'), refused });
  const s1 = session('A');
  const s2 = session('A');
  const s3 = session('B');
  assert.is(h.hold(s1, 'k1', 0), HoldResult.Recorded);
  assert.is(h.hold(s1, 'k2', 0), HoldResult.Recorded);
  assert.is(h.hold(s1, 'k3', 0), HoldResult.OverShare, 'session share');
  assert.is(h.hold(s1, 'k1', 0), HoldResult.Recorded, 'a key already held costs nothing more');
  assert.is(h.hold(s2, 'k1', 0), HoldResult.Recorded);
  assert.is(h.hold(s2, 'k2', 0), HoldResult.OverShare, 'address share');
  assert.is(h.hold(s3, 'k1', 0), HoldResult.Recorded);
  assert.is(h.hold(s3, 'k2', 0), HoldResult.Full, 'app bound');
  assert.is(h.hold(s3, 'x1', 0), HoldResult.NotOwner);
  assert.equal(refused, { share: 2, owner: 1, full: 1 });
  h.gone(s1);
  assert.is(h.size, 2);
  assert.is(h.hold(s2, 'k2', 0), HoldResult.Recorded, 'the address share freed');
  assert.ok(h.release(s2, 'k2'));
  assert.not.ok(h.release(s2, 'k2'), 'a Release of a key not held is ignored');
});

test('letting go: registrations of keys no longer owned end, listed with their holders', () => {
  const h = new Holders();
  const s1 = session();
  const s2 = session('B');
  h.hold(s1, 'mine', 0);
  h.hold(s1, 'lost', 0);
  h.hold(s2, 'lost', 0);
  const out = [...h.releaseWhere((k) => k === 'mine')];
  assert.equal(out, [['lost', [s1, s2]]]);
  assert.is(h.holdersOf('lost'), undefined);
  assert.equal([...s1.held!], ['mine']);
});

test.run();
