import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseRules } from '@hotkey/sdk/rules';
import { Aggregator, type AggregatorListener } from './aggregator.ts';
import { reporterBit } from './reporters.ts';

const THRESHOLD = 200;

function setup(maxKeys: number, random?: () => number) {
  const promoted: string[] = [];
  const listener: AggregatorListener = { promote: (key) => promoted.push(key), demote: () => {} };
  const agg = new Aggregator({ rules: parseRules([{ match: '*', threshold: THRESHOLD }]), listener, maxKeys, random });
  return { agg, promoted };
}

/** a seeded uniform source, so that a sampling test replays exactly */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/**
 * One flooding session reports fresh keys at threshold − 1 (never promoted, each takes a slot)
 * while two legit instances gather a real key's counts a tenth of the threshold at a time: the
 * flood may evict only its own keys, so the legit key reaches its threshold. `shared: false` is
 * the same traffic without sessions (admission not limited per session) for contrast.
 */
function flood(shared: boolean) {
  const maxKeys = 1000;
  const { agg, promoted } = setup(maxKeys, seeded(7));
  const attacker = shared ? agg.openShare() : undefined;
  const legit = [shared ? agg.openShare() : undefined, shared ? agg.openShare() : undefined];
  const bits = [reporterBit('legit-a'), reporterBit('legit-b')];
  const junkBit = reporterBit('attacker');
  let next = 0;
  const junk = (now: number) => {
    const keys = Array.from({ length: 500 }, () => `junk:${next++}`);
    agg.ingest(
      keys,
      new Array<number>(keys.length).fill(THRESHOLD - 1),
      junkBit,
      now,
      undefined,
      0,
      keys.length,
      attacker,
    );
  };
  junk(0);
  junk(0); // the table is full of the attacker's keys
  for (let step = 0; step < 20 && promoted.length === 0; step++) {
    const now = 10 + step * 10;
    const i = step % 2;
    agg.ingest(['legit'], [THRESHOLD / 10], bits[i]!, now, undefined, 0, 1, legit[i]);
    junk(now);
  }
  return { agg, promoted, attacker };
}

test('a session flooding keys at threshold − 1 evicts only its own: the legit key is promoted', () => {
  const { agg, promoted } = flood(true);
  assert.equal(promoted, ['legit']);
  const stats = agg.stats;
  assert.ok(stats.keys <= 1000, `the table stays at its cap (${stats.keys})`);
  assert.ok(stats.evictedOverShare > 5000, `the flood paid with its own keys (${stats.evictedOverShare})`);
  assert.is(stats.dropped, 0);
});

test('without sessions the same flood evicts the legit key while it gathers counts', () => {
  const { promoted } = flood(false);
  assert.equal(promoted, [], 'the contrast the shares exist for');
});

test('a session at its part of the table that samples only others keys is refused, and counted', () => {
  // random() = 0 samples slot 0 only: the legit key
  const { agg } = setup(4, () => 0);
  const legit = agg.openShare();
  const attacker = agg.openShare();
  agg.ingest(['legit'], [50], 1, 0, undefined, 0, 1, legit);
  agg.ingest(['a1', 'a2', 'a3'], [50, 50, 50], 2, 0, undefined, 0, 3, attacker);
  agg.ingest(['a4'], [50], 2, 0, undefined, 0, 1, attacker);
  assert.is(agg.count('legit', 0), 50, 'the legit key stayed');
  assert.is(agg.count('a4', 0), 0, 'the new key was not tracked');
  assert.is(agg.stats.keysRefused, 1);
  assert.is(agg.stats.dropped, 0, 'a refusal is not a full-of-hot-keys drop');
  // the legit session closes: the attacker, alone, holds less than the whole table and may replace it
  agg.closeShare(legit);
  agg.ingest(['a4'], [50], 2, 0, undefined, 0, 1, attacker);
  assert.is(agg.count('a4', 0), 50);
  assert.is(agg.count('legit', 0), 0);
});

test('keys several instances reported are evicted after keys one instance reported', () => {
  const { agg } = setup(3, seeded(3));
  // admitted without sessions: judged by their reporters alone
  agg.ingest(['both'], [10], reporterBit('x'), 0);
  agg.ingest(['both'], [10], reporterBit('y'), 0);
  agg.ingest(['solo1', 'solo2'], [100, 100], reporterBit('x'), 0);
  // a session under its part replaces single-reporter keys though `both` is smaller
  const b = agg.openShare();
  for (let i = 0; i < 20; i++) agg.ingest([`new:${i}`], [1], reporterBit('z'), 0, undefined, 0, 1, b);
  assert.is(agg.count('both', 0), 20, 'the key two instances reported stayed');
});

test.run();
