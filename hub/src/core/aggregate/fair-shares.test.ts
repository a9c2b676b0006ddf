import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseRules } from '@hotkey/sdk/rules';
import { Aggregator, type AggregatorListener } from './aggregator.ts';
import { addressGroup, type FairShare } from './fair-shares.ts';
import { reporterBit } from './reporter-count.ts';

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
  const junk = junkFrom(agg, [attacker], 500);
  junk(0);
  junk(0); // the table is full of the attacker's keys
  gather(agg, promoted, legit, junk);
  return { agg, promoted, attacker };
}

const LEGIT_BITS = [reporterBit('legit-a'), reporterBit('legit-b')];

/** Fresh keys at threshold − 1 from each of `shares`, `perShare` a call: never promoted, each takes a slot. */
function junkFrom(agg: Aggregator, shares: readonly (FairShare | undefined)[], perShare: number) {
  const bit = reporterBit('attacker');
  let next = 0;
  return (now: number) => {
    for (const share of shares) {
      const keys = Array.from({ length: perShare }, () => `junk:${next++}`);
      agg.ingest(keys, new Array<number>(perShare).fill(THRESHOLD - 1), bit, now, undefined, 0, perShare, share);
    }
  };
}

/** Two legit instances report `legit` a tenth of the threshold at a time, the flood between, until it is promoted (20 steps at most). */
function gather(
  agg: Aggregator,
  promoted: string[],
  legit: readonly (FairShare | undefined)[],
  junk: (now: number) => void,
): void {
  for (let step = 0; step < 20 && promoted.length === 0; step++) {
    const now = 10 + step * 10;
    const i = step % 2;
    agg.ingest(['legit'], [THRESHOLD / 10], LEGIT_BITS[i]!, now, undefined, 0, 1, legit[i]);
    junk(now);
  }
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

/**
 * Twenty sessions from one address flood keys at threshold − 1 while two legit sessions from
 * another address each hold 100 background candidates (more than a twenty-second of the table)
 * and gather a real key a tenth of the threshold at a time. `legitAddress` equal to the
 * attacker's puts every session on one address: the per-session rule alone.
 */
function manySessions(legitAddress: string) {
  const maxKeys = 1000;
  const { agg, promoted } = setup(maxKeys, seeded(11));
  const attackers = Array.from({ length: 20 }, () => agg.openShare('10.0.0.9'));
  const legit = [agg.openShare(legitAddress), agg.openShare(legitAddress)];
  legit.forEach((share, i) => {
    const keys = Array.from({ length: 100 }, (_, k) => `bg:${i}:${k}`);
    agg.ingest(keys, new Array<number>(keys.length).fill(1), LEGIT_BITS[i]!, 0, undefined, 0, keys.length, share);
  });
  const junk = junkFrom(agg, attackers, 50);
  junk(0);
  gather(agg, promoted, legit, junk);
  const background = Array.from({ length: 200 }, (_, k) => `bg:${Math.floor(k / 100)}:${k % 100}`).filter(
    (key) => agg.count(key, 200) > 0,
  ).length;
  return { agg, promoted, background };
}

test('many sessions from one address evict no candidate of another address', () => {
  const { agg, promoted, background } = manySessions('10.0.0.1');
  assert.equal(promoted, ['legit']);
  assert.is(background, 200, 'every background candidate of the legit address stayed');
  const stats = agg.stats;
  assert.ok(stats.keys <= 1000, `the table stays at its cap (${stats.keys})`);
  assert.is(stats.shareAddresses, 2);
  assert.ok(stats.evictedOverShare > 1000, `the flood paid with its own keys (${stats.evictedOverShare})`);
});

test('the same sessions on one address: per-session parts alone let the flood evict legit candidates', () => {
  // the legit sessions hold more than a twenty-second of the table, so their keys go first (the
  // smallest totals); the real key survives here only once their other candidates are gone
  const { background } = manySessions('10.0.0.9');
  assert.ok(background < 100, `background candidates were evicted (${background} of 200 left)`);
});

test('a fresh session of an address holding its part is refused rather than evict another address', () => {
  // random() = 0 samples slot 0 only: the legit key
  const { agg } = setup(4, () => 0);
  const legit = agg.openShare('10.0.0.1');
  const first = agg.openShare('10.0.0.9');
  agg.ingest(['legit'], [50], 1, 0, undefined, 0, 1, legit);
  agg.ingest(['a1', 'a2', 'a3'], [50, 50, 50], 2, 0, undefined, 0, 3, first);
  const fresh = agg.openShare('10.0.0.9'); // holds nothing: under its own part
  agg.ingest(['a4'], [50], 3, 0, undefined, 0, 1, fresh);
  assert.is(agg.count('legit', 0), 50, 'the legit key stayed');
  assert.is(agg.count('a4', 0), 0, 'the new key was not tracked');
  assert.is(agg.stats.keysRefused, 1);
  assert.is(agg.stats.keysRefusedForAddress, 1, 'refused for its address, not for itself');
});

test('addressGroup: IPv4 as is (IPv4-mapped unwrapped), IPv6 by its /64, unknown as given', () => {
  assert.is(addressGroup('127.0.0.2'), '127.0.0.2');
  assert.is(addressGroup('::ffff:127.0.0.2'), '127.0.0.2');
  assert.is(addressGroup('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  assert.is(addressGroup('2001:DB8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64');
  assert.is(addressGroup('2001:db8::1'), '2001:db8:0:0::/64');
  assert.is(addressGroup('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.is(addressGroup('::1'), '0:0:0:0::/64');
  assert.not.equal(addressGroup('2001:db8:1:3::1'), addressGroup('2001:db8:1:2::1'));
  assert.is(addressGroup(''), '');
});

test('a closed session gives its address back its place: the address count follows the holders', () => {
  const { agg } = setup(100);
  const a = agg.openShare('10.0.0.1');
  const b = agg.openShare('10.0.0.1');
  const c = agg.openShare('10.0.0.2');
  agg.ingest(['a1'], [1], 1, 0, undefined, 0, 1, a);
  agg.ingest(['b1'], [1], 2, 0, undefined, 0, 1, b);
  assert.is(agg.stats.shareAddresses, 1, 'only holders count');
  agg.ingest(['c1'], [1], 3, 0, undefined, 0, 1, c);
  assert.is(agg.stats.shareAddresses, 2);
  agg.closeShare(a);
  assert.is(agg.stats.shareAddresses, 2, 'b still holds for 10.0.0.1');
  agg.closeShare(b);
  assert.is(agg.stats.shareAddresses, 1);
  agg.closeShare(c);
  assert.is(agg.stats.shareAddresses, 0);
});

test.run();
