import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AccessWindow } from './window.ts';
import { parseRules, RuleSet } from '../rules.ts';

function times(window: AccessWindow, key: string, n: number): void {
  for (let i = 0; i < n; i++) window.track(key);
}

test('counts a key once admitted and slides out slice by slice', () => {
  const w = new AccessWindow({ admission: 1, now: 0 });
  times(w, 'a', 5); // slice 0
  w.advance(100);
  times(w, 'a', 3); // slice 1
  assert.is(w.count('a'), 8);
  w.advance(999); // still inside the first window: slice 9
  assert.is(w.count('a'), 8);
  w.advance(1000); // slice 0 expires
  assert.is(w.count('a'), 3);
  w.advance(1100); // slice 1 expires: the candidate is empty and leaves
  assert.is(w.count('a'), 0);
  assert.is(w.stats().candidates, 0);
});

test('a jump longer than the window clears every slice', () => {
  const w = new AccessWindow({ admission: 1, now: 0 });
  times(w, 'a', 4);
  w.advance(50);
  times(w, 'a', 4);
  w.advance(60_000);
  assert.is(w.count('a'), 0);
  times(w, 'a', 2);
  assert.is(w.count('a'), 2);
});

test('admission: a key gets an exact counter once the sketch saw it often enough', () => {
  const w = new AccessWindow({ admission: 3, now: 0 });
  w.track('k');
  w.track('k');
  assert.is(w.count('k'), 0);
  assert.is(w.estimate('k'), 2);
  w.track('k');
  assert.is(w.count('k'), 1);
  times(w, 'k', 10);
  assert.is(w.count('k'), 11);
});

test('admission: a rule whose per-instance threshold is 1 admits its keys on their first access (thin spread)', () => {
  const rules = new RuleSet(
    parseRules([
      { match: 'thin:*', threshold: 1000 },
      { match: 'item:*', threshold: 1000 },
    ]),
  );
  const w = new AccessWindow({ rules, now: 0 }); // default admission: two accesses
  w.setThresholds([1, 4]);
  // 0.24 accesses/s: one access per ~4 s, the sketch halved in between, never an estimate of 2
  for (let t = 0; t < 20_000; t += 4200) {
    w.advance(t);
    w.track('thin:k');
    w.track('item:k');
    assert.is(w.count('thin:k'), 1, `thin:k counted at ${t} ms`);
    assert.is(w.count('item:k'), 0, 'a rule above 1 keeps the admission filter');
    assert.equal(w.collect().keys, ['thin:k'], 'each access reported');
  }
});

test('collect: keys at their rule threshold accessed since the last collect, with those counts', () => {
  const rules = new RuleSet(
    parseRules([
      { match: 'item:*', threshold: 100 },
      { match: 'user:*', threshold: 100 },
    ]),
  );
  const w = new AccessWindow({ admission: 1, rules, now: 0 });
  times(w, 'item:1', 10);
  times(w, 'user:1', 4);
  times(w, 'other', 50); // no rule: never reported
  let got = w.collect([10, 5]);
  assert.equal(got.keys, ['item:1']);
  assert.equal(got.counts, [10]);
  assert.equal(got.rules, [0]);
  // nothing new since the report: nothing to send
  assert.equal(w.collect([10, 5]).keys, []);
  w.track('item:1');
  w.track('user:1'); // reaches 5 now: reports only what came since the last collect (no backlog)
  got = w.collect([10, 5]);
  assert.equal(got.keys.sort(), ['item:1', 'user:1']);
  assert.equal(got.counts[got.keys.indexOf('item:1')], 1);
  assert.equal(got.counts[got.keys.indexOf('user:1')], 1);
});

test('collect caps the count at the window total after slices expire', () => {
  const w = new AccessWindow({ admission: 1, now: 0 });
  times(w, 'a', 30); // below threshold 40 but no collect yet: all 30 are pending
  w.advance(500);
  times(w, 'a', 20);
  assert.equal(w.collect([40]).counts, [50]);
  times(w, 'a', 30);
  w.advance(1000); // the first 30 leave
  times(w, 'a', 5);
  const got = w.collect([40]);
  assert.equal(got.counts, [35]);
});

test('setRules recomputes every candidate rule index', () => {
  const w = new AccessWindow({
    admission: 1,
    rules: new RuleSet(parseRules([{ match: 'a:*', threshold: 10 }])),
    now: 0,
  });
  times(w, 'b:1', 20);
  assert.equal(w.collect([1]).keys, []);
  w.setRules(
    new RuleSet(
      parseRules([
        { match: 'a:*', threshold: 10 },
        { match: 'b:*', threshold: 10 },
      ]),
    ),
  );
  w.track('b:1');
  assert.equal(w.collect([1, 1]).keys, ['b:1']);
});

test('bounded under 200k distinct keys; a planted hot key is still found', () => {
  const w = new AccessWindow({ maxCandidates: 1024, now: 0 });
  let now = 0;
  let hot = 0;
  for (let i = 0; i < 200_000; i++) {
    w.track(`one-off:${i}`);
    if (i % 100 === 0) {
      w.track('planted');
      hot++;
    }
    if (i % 10_000 === 9_999) w.advance((now += 45)); // 200k keys within 0.9 s: nothing expires yet
  }
  const s = w.stats();
  assert.ok(s.candidates <= 1024, `candidates ${s.candidates}`);
  // the planted key lost at most its first admission-1 accesses
  assert.ok(w.count('planted') >= hot - 2, `planted ${w.count('planted')} of ${hot}`);
  const got = w.collect([1000]);
  assert.equal(got.keys, ['planted']);
  // memory: the one-off keys are not all retained
  assert.ok(s.admitted < 200_000);
});

test('keys matching no rule are evicted first', () => {
  const rules = new RuleSet(parseRules([{ match: 'r:*', threshold: 10 }]));
  const w = new AccessWindow({ maxCandidates: 4, admission: 1, evictionSamples: 4, rules, now: 0 });
  times(w, 'x1', 100);
  times(w, 'r:1', 5);
  times(w, 'r:2', 5);
  times(w, 'r:3', 5);
  for (let i = 0; i < 20; i++) times(w, `r:new${i}`, 1);
  // The unmatched key, however busy, goes before matched keys
  assert.is(w.count('x1'), 0);
  assert.is(w.stats().candidates, 4);
});

test('slots freed in any order: the survivors keep their counts and are all collected', () => {
  const w = new AccessWindow({ admission: 1, maxCandidates: 128, now: 0 });
  for (let i = 0; i < 100; i++) if (i % 3 === 0) times(w, `k${i}`, 2); // slice 0
  w.advance(500);
  for (let i = 0; i < 100; i++) if (i % 3 !== 0) times(w, `k${i}`, 3); // slice 5
  assert.is(w.stats().candidates, 100);
  w.advance(1000); // slice 0 expires: every third key empties and leaves, from all over the list
  assert.is(w.stats().candidates, 66);
  for (let i = 0; i < 100; i++) assert.is(w.count(`k${i}`), i % 3 === 0 ? 0 : 3, `k${i}`);
  const got = w.collect([3]);
  assert.equal(
    [...got.keys].sort(),
    Array.from({ length: 100 }, (_, i) => `k${i}`)
      .filter((_, i) => i % 3 !== 0)
      .sort(),
  );
  // freed slots are reused, and the list still holds exactly the live keys
  for (let i = 0; i < 62; i++) times(w, `n${i}`, 3);
  assert.is(w.stats().candidates, 128);
  assert.is(w.collect([3]).keys.length, 62);
  w.advance(5000);
  assert.is(w.stats().candidates, 0);
  assert.is(w.collect([1]).keys.length, 0);
});

test('urgent: reaching the threshold signals once; collectUrgent takes only urgent keys', () => {
  let signals = 0;
  const w = new AccessWindow({ admission: 1, now: 0, onUrgent: () => signals++ });
  w.setThresholds([10]);
  times(w, 'steady', 30); // urgent at 10, and again at 20 and 30 (its episode re-arms)
  assert.is(signals, 3);
  assert.equal(w.collect().keys, ['steady']); // collect clears the urgent list too
  assert.not.ok(w.urgent);
  times(w, 'steady', 5); // 35: not at the re-arm level (30 + 10) yet
  times(w, 'surge', 9);
  assert.is(signals, 3);
  assert.not.ok(w.urgent);
  w.track('surge'); // reaches 10
  assert.is(signals, 4);
  assert.ok(w.urgent);
  const got = w.collectUrgent();
  assert.equal(got.keys, ['surge']);
  assert.equal(got.counts, [10]);
  assert.not.ok(w.urgent);
  assert.equal(w.collectUrgent().keys, []);
  // the steady key's counts were left for the next collect
  const rest = w.collect();
  assert.equal(rest.keys, ['steady']);
  assert.equal(rest.counts, [5]);
});

test('urgent: re-armed every threshold for urgentSlices, then quiet until a window below threshold', () => {
  let signals = 0;
  const w = new AccessWindow({ admission: 1, now: 0, urgentSlices: 3, onUrgent: () => signals++ });
  w.setThresholds([4]);
  times(w, 'k', 4); // first crossing at slice 0: urgent until slice 3
  assert.is(signals, 1);
  times(w, 'k', 4); // 8
  assert.is(signals, 2);
  w.advance(250); // slice 2
  times(w, 'k', 4); // 12
  assert.is(signals, 3);
  assert.equal(w.collectUrgent().counts, [12]);
  w.advance(300); // slice 3: the episode is over
  times(w, 'k', 40);
  assert.is(signals, 3, 'a key that stays busy is not urgent again');
  w.advance(1200); // slices 0-2 left; the 40 of slice 3 remain: over the threshold, still quiet
  assert.is(w.count('k'), 40);
  times(w, 'k', 4);
  assert.is(signals, 3);
  w.advance(2400); // a whole window with nothing: the key emptied and left
  assert.is(w.count('k'), 0);
  times(w, 'k', 1); // the sketch still remembers it: admitted at once with 1
  times(w, 'k', 3);
  assert.is(signals, 4, 'a new surge after the key went quiet is urgent again');
});

test('urgent: a key below threshold for a window after its episode is armed again without leaving', () => {
  let signals = 0;
  const w = new AccessWindow({ admission: 1, now: 0, urgentSlices: 1, onUrgent: () => signals++ });
  w.setThresholds([5]);
  times(w, 'k', 5);
  assert.is(signals, 1);
  w.advance(100); // episode over (1 slice)
  times(w, 'k', 1); // keeps the key alive, below threshold once slice 0 leaves
  w.advance(1000); // slice 0 (5) leaves: total 1 < 5, and the episode ended a window ago (slice 1 + 10 > 10: not yet)
  times(w, 'k', 4);
  assert.is(signals, 1, 'not a window after the episode yet');
  w.advance(1100); // slice 1 leaves (1), total 4 < 5, slice 11 >= 1 + 10: armed
  w.track('k');
  assert.is(signals, 2);
});

test('urgent: new thresholds make a key already over them urgent; calm() ends an episode', () => {
  let signals = 0;
  const w = new AccessWindow({ admission: 1, now: 0, onUrgent: () => signals++ });
  w.setThresholds([100]);
  times(w, 'k', 20);
  assert.is(signals, 0);
  w.setThresholds([10]);
  assert.is(signals, 1);
  assert.equal(w.collectUrgent().keys, ['k']);
  w.calm('k');
  times(w, 'k', 50);
  assert.is(signals, 1);
  assert.not.ok(w.urgent);
  // without thresholds (the accuracy bench's use) nothing is ever urgent
  const plain = new AccessWindow({ admission: 1, now: 0, onUrgent: () => signals++ });
  times(plain, 'k', 1000);
  assert.is(signals, 1);
  assert.equal(plain.collect([10]).keys, ['k']);
});

test('trackAt counts through a remembered slot only while the slot still belongs to the key', () => {
  const w = new AccessWindow({
    admission: 2,
    maxCandidates: 1,
    now: 0,
    rules: new RuleSet(parseRules([{ match: 'k*', threshold: 1 }])),
  });
  assert.is(w.track('k1'), -1, 'only in the sketch yet: no slot');
  assert.not.ok(w.trackAt(-1, 'k1'));
  const slot = w.track('k1');
  assert.ok(slot >= 0);
  assert.ok(w.trackAt(slot, 'k1'));
  assert.ok(w.trackAt(slot, 'k1'));
  assert.is(w.count('k1'), 3, 'the admitting access and two through the slot, exactly');
  assert.equal(w.collect([1]).counts, [3], 'pending counts too');
  assert.not.ok(w.trackAt(slot, 'k2'), "another key's slot counts nothing");
  assert.is(w.count('k1'), 3);
  // the window empties: the slot is released, then recycled for another key
  w.advance(1000);
  assert.is(w.count('k1'), 0);
  times(w, 'k2', 2);
  assert.is(w.track('k2'), slot, "the only slot, now k2's");
  assert.not.ok(w.trackAt(slot, 'k1'), 'a stale slot counts nothing for its former key');
  assert.is(w.count('k2'), 2);
  assert.is(w.count('k1'), 0);
});

test('options are validated', () => {
  assert.throws(
    () => new AccessWindow({ maxCandidates: 0 }),
    (e: unknown) => e instanceof TypeError,
  );
  assert.throws(
    () => new AccessWindow({ sliceMs: -1 }),
    (e: unknown) => e instanceof TypeError,
  );
});

test('memory follows the keys counted: slots grow under a flood, up to maxCandidates, and come back after it', () => {
  const w = new AccessWindow({ maxCandidates: 4096, admission: 1, now: 0 });
  const start = w.stats().slots;
  assert.ok(start < 4096, `starts below the bound (${start} slots)`);
  let now = 0;
  for (let i = 0; i < 20_000; i++) {
    w.track(`flood:${i}`);
    if (i === 10_000) times(w, 'steady', 5); // admitted mid-flood: a slot high in the table
    if (i % 1000 === 999) w.advance((now += 10));
  }
  const high = w.track('steady');
  assert.ok(high >= start, `steady sits at slot ${high}, above the compacted size`);
  const flooded = w.stats();
  assert.is(flooded.slots, 4096, 'grew to the bound');
  assert.ok(flooded.candidates <= 4096);
  assert.ok(flooded.evicted > 0, 'full at the bound, it evicts');
  // the flood stops; the steady key keeps counting through the window's turns
  for (let s = 0; s < 40; s++) {
    times(w, 'steady', 3);
    w.advance((now += 100));
  }
  const after = w.stats();
  assert.is(after.slots, start, `compacted back (${after.slots} slots)`);
  // 3 in each of the window's 9 past slices (the current one is empty)
  assert.is(w.count('steady'), 27, 'a key moved by compaction keeps its counts');
  assert.is(w.trackAt(high, 'steady'), false, 'it moved');
  assert.equal(w.collect([10]).keys, ['steady']);
});

test('a remembered slot number is refused once compaction moved its key; track() finds the key again', () => {
  const w = new AccessWindow({ maxCandidates: 1024, admission: 1, now: 0 });
  for (let i = 0; i < 500; i++) w.track(`k${i}`);
  const last = w.track('k499');
  assert.ok(last >= 64, `slot ${last} lies above the initial size`);
  let now = 0;
  for (let s = 0; s < 30; s++) {
    w.track('k499');
    w.advance((now += 100));
  }
  assert.ok(w.stats().slots < 1024);
  assert.is(w.trackAt(last, 'k499'), false, 'the old slot is no longer the key');
  const moved = w.track('k499');
  assert.ok(moved >= 0 && moved !== last);
  assert.ok(w.trackAt(moved, 'k499'));
});

test.run();
