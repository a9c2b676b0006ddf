import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { localThreshold, parseRules, type Rule } from '@hotkey/sdk/rules';
import { encode, MsgType } from '@hotkey/sdk/protocol';
import { readReport } from '../ingest/report-frame.ts';
import { TokenBucket } from '../token-bucket.ts';
import { Aggregator, type AggregatorListener, type DemoteReason } from './aggregator.ts';
import { reporterBit } from './reporter-count.ts';

interface Recorded {
  promotes: { key: string; qps: number; latencyMs: number | undefined; manual: boolean; rule: Rule }[];
  demotes: { key: string; qps: number; reason: DemoteReason }[];
}

function setup(
  rules: unknown,
  options: { maxKeys?: number; random?: () => number; maxHot?: number; initialCapacity?: number } = {},
) {
  const rec: Recorded = { promotes: [], demotes: [] };
  const listener: AggregatorListener = {
    promote: (key, rule, qps, latencyMs, manual) => rec.promotes.push({ key, rule, qps, latencyMs, manual }),
    demote: (key, qps, reason) => rec.demotes.push({ key, qps, reason }),
  };
  const agg = new Aggregator({ rules: parseRules(rules), listener, ...options });
  return { agg, rec };
}

const one = (agg: Aggregator, key: string, count: number, now: number, reporter = 0) =>
  agg.ingest([key], [count], reporter, now);

test('window sums slices and forgets them as they expire', () => {
  const { agg } = setup([{ match: '*', threshold: 1_000_000, windowMs: 1000 }]);
  one(agg, 'k', 10, 0); // slice 0
  one(agg, 'k', 20, 150); // slice 1
  one(agg, 'k', 30, 950); // slice 9
  assert.is(agg.count('k', 999), 60);
  assert.is(agg.count('k', 1000), 50, 'slice 0 (t=0..99) expired at t=1000');
  assert.is(agg.count('k', 1100), 30, 'slice 1 expired at t=1100');
  assert.is(agg.count('k', 1899), 30);
  assert.is(agg.count('k', 1900), 0, 'slice 9 (t=900..999) expired at t=1900');
  one(agg, 'k', 5, 5000); // long gap: whole window cleared lazily
  assert.is(agg.count('k', 5000), 5);
});

test('window length follows the rule', () => {
  const { agg } = setup([
    { match: 'slow:*', threshold: 1_000_000, windowMs: 10_000 },
    { match: '*', threshold: 1_000_000, windowMs: 100 },
  ]);
  one(agg, 'slow:1', 7, 0);
  one(agg, 'fast', 7, 0);
  assert.is(agg.count('slow:1', 9_999), 7);
  assert.is(agg.count('fast', 99), 7);
  assert.is(agg.count('fast', 100), 0);
});

test('detection latency is bounded by the window for a key that hovered below its threshold', () => {
  const { agg, rec } = setup([{ match: 'item:*', threshold: 100 }]);
  for (let t = 0; t < 5000; t += 100) one(agg, 'item:1', 9, t); // 90 per window for 5 s
  assert.is(rec.promotes.length, 0);
  one(agg, 'item:1', 20, 5050);
  assert.is(rec.promotes.length, 1);
  const latency = rec.promotes[0]!.latencyMs!;
  assert.ok(latency > 800 && latency <= 1000, `latency ${latency} ms spans the window, not the 5 s of hovering`);
});

test('promotes the moment the total reaches the threshold, never at half', () => {
  const { agg, rec } = setup([{ match: 'item:*', threshold: 100 }]);
  one(agg, 'item:1', 50, 0);
  agg.tick(50);
  assert.is(rec.promotes.length, 0, 'half the threshold is not hot');
  one(agg, 'item:1', 49, 60);
  assert.is(rec.promotes.length, 0);
  one(agg, 'item:1', 1, 70);
  assert.is(rec.promotes.length, 1);
  const p = rec.promotes[0]!;
  assert.is(p.key, 'item:1');
  assert.is(p.qps, (100 * 1000) / 970, 'the window at t=70 covers 9 full slices and 70 ms of the current one');
  assert.is(p.latencyMs, 70, 'from the first report in the crossing window');
  assert.is(p.manual, false);
  assert.ok(agg.isHot('item:1'));
  one(agg, 'item:1', 500, 80);
  assert.is(rec.promotes.length, 1, 'renewal does not re-broadcast');
});

test('a key spread over many reports and reporters adds up cluster-wide', () => {
  const { agg, rec } = setup([{ match: '*', threshold: 1000 }]);
  for (let i = 0; i < 200; i++) one(agg, 'spread', i === 199 ? 4 : 5, i * 4, reporterBit(`instance-${i}`));
  assert.is(rec.promotes.length, 0, '1000 - 1 below');
  one(agg, 'spread', 1, 900, 3);
  assert.is(rec.promotes.length, 1);
  const [view] = agg.hot(900);
  assert.ok(view!.instances > 60 && view!.instances <= 200, `instances estimate ${view!.instances}`);
});

test('qps of a steady rate reads the rate at any point of a slice, not ~9 % low', () => {
  const { agg, rec } = setup([
    { match: '*', threshold: 1_000_000, windowMs: 1000 },
    { match: 'slow:*', threshold: 1_000_000, windowMs: 5000 },
  ]);
  // 1000/s in steps of 10 ms (10 per step): the window total runs 900..1000 as the current slice fills
  let t = 0;
  const feed = (until: number) => {
    for (; t < until; t += 10) agg.ingest(['k', 'slow:k'], [10, 10], 0, t);
  };
  const observed: number[] = [];
  for (let end = 6000; end < 6100; end += 10) {
    feed(end); // last records at end - 10, so `end - 1` sees every record up to and including that step
    const now = end - 1;
    const qps = agg.qps('k', now);
    observed.push(qps);
    const elapsed = now % 100;
    assert.is(agg.count('k', now), 900 + (Math.floor(elapsed / 10) + 1) * 10, `count at ${now}`);
    // 9 full slices (900 records) + the current slice's records over 900 ms + its elapsed ms
    assert.is(qps, (agg.count('k', now) * 1000) / (900 + elapsed));
    assert.ok(Math.abs(qps - 1000) <= 10, `${qps.toFixed(1)} qps at ${now} ms for 1000/s driven`);
    assert.ok(
      Math.abs(agg.qps('slow:k', now) - 1000) <= 10,
      `${agg.qps('slow:k', now).toFixed(1)} qps over a 5 s window`,
    );
  }
  // total / whole window would read 900..990: lowest right after a slice boundary
  assert.ok(Math.min(...observed) > 990, `lowest ${Math.min(...observed).toFixed(1)}`);
  // right on a slice boundary the new slice is empty and the window covers exactly 9 slices
  feed(6100);
  assert.is(agg.count('k', 6100), 900);
  assert.is(agg.qps('k', 6100), 1000);
  assert.is(agg.qps('unknown', 6100), 0);
  assert.is(rec.promotes.length, 0, 'reading qps promotes nothing');
});

test('promotion still needs the window total to reach the threshold; its qps is over the covered time', () => {
  const { agg, rec } = setup([{ match: '*', threshold: 10_000, windowMs: 1000 }]);
  // 9900/s steady, 99 per 10 ms: the total never reaches 10000
  for (let t = 0; t < 3000; t += 10) one(agg, 'k', 99, t);
  assert.is(rec.promotes.length, 0);
  one(agg, 'k', 99, 3000); // 8910 in 9 full slices + 99 just now
  assert.is(agg.count('k', 3000), 9009);
  assert.ok(agg.qps('k', 3000) > 10_000, `qps reads ${agg.qps('k', 3000)} right after a slice boundary`);
  assert.is(rec.promotes.length, 0, 'yet the total (9009) is below the threshold: not promoted');
  one(agg, 'k', 900, 3050);
  assert.is(rec.promotes.length, 0, '9909');
  one(agg, 'k', 91, 3050);
  assert.is(rec.promotes.length, 1, 'the total reached 10000');
  assert.is(rec.promotes[0]!.qps, (10_000 * 1000) / 950, '10000 accesses over 900 + 50 ms');
});

test('keys matching no rule are ignored', () => {
  const { agg, rec } = setup([{ match: 'item:*', threshold: 1 }]);
  one(agg, 'user:1', 1000, 0);
  one(agg, 'user:1', 1000, 1);
  assert.is(rec.promotes.length, 0);
  assert.is(agg.stats.keys, 0);
  assert.is(agg.stats.ignored, 2);
});

test('hysteresis: demoted only after demoteWindows whole windows below threshold * demoteRatio', () => {
  const { agg, rec } = setup([
    { match: '*', threshold: 100, windowMs: 1000, hotMs: 60_000, demoteRatio: 0.5, demoteWindows: 3 },
  ]);
  one(agg, 'k', 100, 0);
  assert.is(rec.promotes.length, 1);
  // 60 per window (above the 50 demotion level) keeps it hot without renewing it
  for (let t = 1000; t < 10_000; t += 100) {
    one(agg, 'k', 6, t);
    agg.tick(t + 1);
  }
  assert.is(rec.demotes.length, 0, 'between demotion level and threshold stays hot');
  // now 40 per window: below the level
  const lowStart = 10_000;
  let demotedAt = -1;
  for (let t = lowStart; t < 20_000 && demotedAt < 0; t += 100) {
    one(agg, 'k', 4, t);
    agg.tick(t + 1);
    if (rec.demotes.length > 0) demotedAt = t + 1;
  }
  assert.is(rec.demotes[0]?.reason, 'cooled');
  // the window sum drops under 50 about one window after the rate drops, then 3 windows must pass
  assert.ok(demotedAt >= lowStart + 3000 && demotedAt <= lowStart + 4200, `demoted at ${demotedAt}`);
  assert.not.ok(agg.isHot('k'));
});

test('expires when hotMs passes without renewal', () => {
  const { agg, rec } = setup([{ match: '*', threshold: 10, hotMs: 2000, demoteWindows: 100, demoteRatio: 0.01 }]);
  one(agg, 'k', 10, 0);
  one(agg, 'k', 10, 500); // renews: hot until 2500
  agg.tick(2499);
  assert.is(rec.demotes.length, 0);
  agg.tick(2500);
  assert.equal(
    rec.demotes.map((d) => d.reason),
    ['expired'],
  );
  one(agg, 'k', 10, 3000);
  assert.is(rec.promotes.length, 2, 'promoted again when it comes back');
});

test('manual promote and demote', () => {
  const { agg, rec } = setup([{ match: 'item:*', threshold: 1000 }]);
  assert.ok(agg.promote('item:9', 0));
  assert.is(rec.promotes[0]?.manual, true);
  assert.is(rec.promotes[0]?.latencyMs, undefined);
  assert.not.ok(agg.promote('user:1', 0), 'no rule matches');
  assert.ok(agg.demote('item:9', 1));
  assert.is(rec.demotes[0]?.reason, 'manual');
  assert.not.ok(agg.demote('item:9', 2));
});

test('rule changes: re-matched keys keep counting, unmatched keys go, hot ones are demoted', () => {
  const { agg, rec } = setup([{ match: '*', threshold: 100 }]);
  one(agg, 'item:1', 100, 0);
  one(agg, 'user:1', 40, 0);
  agg.setRules(parseRules([{ match: 'user:*', threshold: 50 }]), 10);
  assert.equal(rec.demotes, [{ key: 'item:1', qps: (100 * 1000) / 910, reason: 'rules' }]);
  assert.is(agg.count('item:1', 10), 0);
  assert.is(agg.count('user:1', 10), 40, 'same window length keeps the count');
  one(agg, 'user:1', 10, 20);
  assert.is(rec.promotes.at(-1)?.key, 'user:1', 'new threshold applies');
  agg.setRules(parseRules([{ match: 'user:*', threshold: 50, windowMs: 2000 }]), 30);
  assert.is(agg.count('user:1', 30), 0, 'new window length restarts the window');
  assert.ok(agg.isHot('user:1'), 'still hot');
  agg.setRules(parseRules([{ match: 'item:*', threshold: 1 }]), 40);
  one(agg, 'item:2', 1, 50);
  assert.ok(agg.isHot('item:2'), 'a key ignored before is matched after the change');
});

test('bounded under 500k distinct keys; hot keys survive eviction', () => {
  let seed = 1;
  const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const { agg, rec } = setup([{ match: '*', threshold: 1000 }], { maxKeys: 10_000, random });
  one(agg, 'hot', 1000, 0);
  const keys: string[] = [];
  const counts: number[] = [];
  for (let i = 0; i < 500_000; i++) {
    keys.push(`k${i}`);
    counts.push(1);
    if (keys.length === 1000) {
      agg.ingest(keys, counts, 1, i / 1000);
      keys.length = 0;
      counts.length = 0;
    }
  }
  const stats = agg.stats;
  assert.ok(stats.keys <= 10_000, `keys ${stats.keys}`);
  assert.ok(stats.evicted >= 490_000, `evicted ${stats.evicted}`);
  assert.ok(agg.isHot('hot'));
  assert.is(rec.promotes.length, 1);
  // a heavy key arriving in a full slab is still admitted and promoted
  one(agg, 'late', 1000, 500);
  assert.ok(agg.isHot('late'));
  // idle keys are freed by the sweep
  for (let t = 2000; t < 2000 + 10; t++) agg.tick(t);
  assert.ok(agg.stats.keys < 10_000, `swept to ${agg.stats.keys}`);
});

test('a lowered key cap holds even when its sample meets only free slots; hot keys stay', () => {
  // every sample lands on the last slot: after the first eviction it is free, so sampling finds nothing
  const { agg } = setup([{ match: '*', threshold: 1000 }], { maxKeys: 2000, random: () => 0.9999 });
  one(agg, 'hot', 1000, 0);
  const keys = Array.from({ length: 1999 }, (_, i) => `k${i}`);
  agg.ingest(
    keys,
    keys.map((_, i) => 1 + (i % 7)),
    1,
    1,
  );
  assert.is(agg.stats.keys, 2000);
  agg.setMaxKeys(500, 2);
  assert.is(agg.stats.keys, 500);
  assert.ok(agg.isHot('hot'));
  // the smallest totals went first: every key of the largest total (7) is still counted
  for (let i = 6; i < 1999; i += 7) assert.is(agg.count(`k${i}`, 2), 7, `k${i}`);
});

test('a slab full of hot keys drops new records instead of growing', () => {
  const { agg } = setup([{ match: '*', threshold: 1 }], { maxKeys: 4 });
  for (let i = 0; i < 4; i++) one(agg, `h${i}`, 1, 0);
  one(agg, 'x', 1, 0);
  assert.is(agg.stats.keys, 4);
  assert.is(agg.stats.dropped, 1);
  assert.not.ok(agg.isHot('x'));
});

test('hot view reports ttl, since and threshold', () => {
  const { agg } = setup([{ match: '*', threshold: 10, hotMs: 5000, windowMs: 2000 }]);
  one(agg, 'k', 10, 1000);
  const [v] = agg.hot(2100); // 9 full 200 ms slices + 100 ms of the current one
  assert.equal(
    { key: v!.key, qps: v!.qps, threshold: v!.threshold, since: v!.since, ttlMs: v!.ttlMs, instances: v!.instances },
    {
      key: 'k',
      qps: 10 / 1.9,
      threshold: 10,
      since: 1000,
      ttlMs: 3900,
      instances: 1,
    },
  );
});

test('ownership: foreign keys are not admitted, and are forgotten when ownership moves', () => {
  const { agg, rec } = setup([{ match: '*', threshold: 10 }]);
  one(agg, 'a', 10, 0);
  one(agg, 'b', 5, 0);
  assert.is(
    agg.setAccept((key) => key !== 'a', 0),
    1,
  );
  assert.is(agg.stats.keys, 1);
  assert.is(rec.demotes.length, 0, 'no demotion broadcast: the new owner decides');
  one(agg, 'a', 100, 1);
  assert.not.ok(agg.isHot('a'));
  assert.is(agg.count('b', 1), 5);
  agg.setAccept(undefined, 1);
  one(agg, 'a', 10, 2);
  assert.ok(agg.isHot('a'), 'accepted again after the change');
});

test('one reporter alone promotes only within its solo budget; a key two instances report needs none', () => {
  const { agg, rec } = setup([{ match: '*', threshold: 10 }]);
  const flooder = new TokenBucket(0, 3, 0); // 3 promotions, no refill
  for (let i = 0; i < 100; i++) agg.ingest([`junk:${i}`], [10], 7, 50, flooder);
  assert.is(rec.promotes.length, 3, 'the budget of the only reporter caps its promotions');
  assert.is(agg.stats.soloRefused, 97);
  // a real key: two instances each report half; the flooder's empty budget is irrelevant
  agg.ingest(['real'], [5], 1, 60, new TokenBucket(0, 1, 0));
  agg.ingest(['real'], [5], 2, 70, flooder);
  assert.ok(agg.isHot('real'));
  // a refused key is reconsidered on its next crossing once the budget allows
  const refill = new TokenBucket(0, 1, 0);
  agg.ingest(['junk:50'], [1], 7, 80, refill);
  assert.ok(agg.isHot('junk:50'));
});

test('at maxHot a stronger key (more reporters, then more QPS) displaces the weakest; a weaker one is refused', () => {
  let r = 0;
  const { agg, rec } = setup([{ match: '*', threshold: 10 }], { maxHot: 3, random: () => (r = (r + 0.37) % 1) });
  for (let i = 0; i < 3; i++) agg.ingest([`solo:${i}`], [10 + i], 7, 0);
  assert.is(agg.stats.hot, 3);
  agg.ingest(['weak'], [10], 8, 10); // one reporter, lowest QPS: refused
  assert.not.ok(agg.isHot('weak'));
  assert.is(agg.stats.capRefused, 1);
  agg.ingest(['real'], [5], 1, 20);
  agg.ingest(['real'], [5], 2, 20); // two reporters beat any solo key
  assert.ok(agg.isHot('real'));
  assert.is(agg.stats.hot, 3);
  assert.is(agg.stats.displaced, 1);
  const evicted = rec.demotes.filter((d) => d.reason === 'evicted');
  assert.is(evicted.length, 1);
  assert.ok(evicted[0]!.key.startsWith('solo:'));
});

test('thin spread: a key at 1.2 x threshold over 5,000 instances, each reporting what crosses its local threshold, is promoted', () => {
  const { agg, rec } = setup([{ match: '*', threshold: 1000, windowMs: 1000 }]);
  const rule = agg.rules[0]!;
  const instances = 5000;
  const local = localThreshold(rule, instances); // what the hub hands each SDK: 1
  assert.is(local, 1);
  // 1200 accesses/s in total, spread evenly: instance i's k-th access at (i + k * 5000) / 1200 s;
  // with a local threshold of 1 each access is reported on its own (one record, count 1)
  const perSecond = 1.2 * rule.threshold;
  const bits = Array.from({ length: instances }, (_, i) => reporterBit(`i-${i}`));
  let promotedAt = -1;
  for (let a = 0; a < perSecond * 3 && promotedAt < 0; a++) {
    const now = (a * 1000) / perSecond;
    one(agg, 'thin', local, now, bits[a % instances]);
    if (rec.promotes.length > 0) promotedAt = now;
  }
  assert.ok(promotedAt >= 0, 'promoted within 3 s');
  assert.ok(promotedAt < 1000, `promoted after ${promotedAt} ms: once the first window is full`);
  assert.is(rec.promotes[0]!.key, 'thin');
});

test('a frame read in place ingests exactly as its decoded keys: growth, eviction, fixed / baseline / topk promotions, unmatched keys', () => {
  // two aggregators fed the same reports, one as strings and one as frames, with the same random
  // source: a small initial slab that grows, a key cap that evicts, keys no rule matches
  const rules = [
    { match: 'item:*', threshold: 40 },
    { match: 'ключ:*', mode: 'baseline', minQps: 5 },
    { match: 'top:*', mode: 'topk', k: 3, minQps: 5 },
  ];
  const make = () => {
    let seed = 9;
    const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 0x1_0000_0000;
    return setup(rules, { maxKeys: 150, initialCapacity: 8, random });
  };
  const strings = make();
  const frames = make();
  let seed = 5;
  const random = () => (seed = (Math.imul(seed, 22695477) + 1) >>> 0) / 0x1_0000_0000;
  const shapes = [
    (i: number) => `item:${i}`,
    (i: number) => `ключ:${i}`,
    (i: number) => `item:${'long'.repeat(8)}:${i}`,
    (i: number) => `other:${i}`,
    (i: number) => `top:${i}`,
  ];
  for (let report = 0; report < 300; report++) {
    const now = report * 20;
    const keys: string[] = [];
    const counts: number[] = [];
    for (let r = 0; r < 50; r++) {
      const rank = Math.floor(1000 * random() ** 4); // skewed: a few hot keys, a long tail
      keys.push(shapes[rank % shapes.length]!(rank));
      counts.push(Math.floor(random() * 4));
    }
    const reporter = report % 7;
    strings.agg.ingest(keys, counts, reporter, now);
    // every other frame's key hashes under another seed than the table's: looked up by bytes alone
    const frame = readReport(encode({ t: MsgType.Report, keys, counts }), report % 2 === 0 ? undefined : 12345)!;
    // in two steps, as the intake splits a long report
    frames.agg.ingestFrame(frame, reporter, now, undefined, 20);
    assert.is(frame.index, 20);
    frames.agg.ingestFrame(frame, reporter, now);
    assert.is(frame.index, keys.length);
    if (report % 10 === 0) {
      strings.agg.tick(now);
      frames.agg.tick(now);
    }
  }
  assert.ok(strings.rec.promotes.length > 0 && strings.agg.stats.evicted > 0 && strings.agg.stats.ignored > 0);
  for (const family of ['item:', 'ключ:', 'top:'])
    assert.ok(
      strings.rec.promotes.some((p) => p.key.startsWith(family)),
      `a ${family} key (${family === 'item:' ? 'fixed' : family === 'top:' ? 'topk' : 'baseline'}) was promoted`,
    );
  assert.equal(frames.rec, strings.rec);
  assert.equal(frames.agg.stats, strings.agg.stats);
  const now = 300 * 20;
  for (let rank = 0; rank < 1000; rank++)
    for (const shape of shapes) assert.is(frames.agg.count(shape(rank), now), strings.agg.count(shape(rank), now));
});

test.run();
