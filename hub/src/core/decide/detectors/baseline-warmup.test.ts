/**
 * Baseline mode from the hub's first second, on injected time: a key busy since the start is not a
 * jump (however its first windows arrive), and a quiet key that jumps 20× is promoted.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseRules } from '@hotkey/sdk/rules';
import { Aggregator } from '../../aggregate/aggregator.ts';
import { BaselineDetector } from './baseline.ts';

const RULE = { match: 'feed:*', mode: 'baseline', factor: 5, minQps: 60 };
/** a hub start on the epoch clock the hub uses, 250 ms into a second */
const START = 1_796_000_000_250;

function setup() {
  const promotes: { key: string; at: number }[] = [];
  let clock = START;
  const agg = new Aggregator({
    rules: parseRules([RULE]),
    now: START,
    listener: { promote: (key) => promotes.push({ key, at: clock }), demote: () => {} },
  });
  /** `rates[key]` accesses per second from reporter `bit`, reported every 100 ms, ticking every 100 ms */
  const drive = (rates: Record<string, number>, from: number, to: number, bit = 1) => {
    for (let t = from; t < to; t += 100) {
      clock = t;
      const keys = Object.keys(rates).filter((k) => rates[k]! > 0);
      if (keys.length > 0)
        agg.ingest(
          keys,
          keys.map((k) => rates[k]! / 10),
          bit,
          t,
        );
      agg.tick(t);
    }
  };
  return { agg, promotes, drive };
}

test("an ownership change before the first report (the hub's start) leaves the warm-up on", () => {
  const s = setup();
  // a hub joins its cluster as it starts: the aggregator is told which keys are its own before it saw any
  s.agg.setAccept(undefined, START);
  s.drive({ 'feed:busy': 400, 'feed:quiet': 15 }, START, START + 8000);
  assert.equal(s.promotes, [], 'busy since the start: not a jump');
  const jump = START + 8000;
  s.drive({ 'feed:busy': 400, 'feed:quiet': 300 }, jump, jump + 2000);
  assert.equal(
    s.promotes.map((p) => p.key),
    ['feed:quiet'],
  );
  assert.ok(s.promotes[0]!.at - jump <= 300, `detected ${s.promotes[0]!.at - jump} ms after the jump`);
});

test('a busy key whose first whole window came in part (SDKs joining late) is not promoted', () => {
  const s = setup();
  // only a few instances report in the key's first windows, then all of them
  s.drive({ 'feed:busy': 20, 'feed:quiet': 15 }, START, START + 1750);
  s.drive({ 'feed:busy': 400, 'feed:quiet': 15 }, START + 1750, START + 10_000);
  assert.equal(s.promotes, [], 'its normal is its steady rate, not its first window');
  const jump = START + 10_000;
  s.drive({ 'feed:busy': 400, 'feed:quiet': 300 }, jump, jump + 2000);
  assert.equal(
    s.promotes.map((p) => p.key),
    ['feed:quiet'],
  );
});

test('a restart of the warm-up never ends one under way sooner', () => {
  const [rule] = parseRules([RULE]);
  const detector = new BaselineDetector(rule!, START, { maxKeys: 100, reportFraction: 0.2 });
  detector.restartWarmup(0); // a caller that had no time yet
  detector.restartWarmup(START - 60_000);
  assert.is(detector.observe('feed:new', 50, START + 100, false), Infinity, 'in the warm-up: not judged yet');
  assert.is(detector.baseline('feed:new')!.seeded, false);
  // after the warm-up a new key starts from its prior and is judged at once
  const after = START + 31_000;
  assert.is(detector.observe('feed:late', 50, after, false), 60);
});

test.run();
