/**
 * HotKeyClient's counting and reports: what is reported, when, and under which rules.
 */
import { RULE_DEFAULTS } from '../rules.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MsgType } from '../wire/protocol.ts';
import { delay, waitFor } from '../../../test/support/wait.ts';
import { closeAll } from '../../../test/support/sdk-client.ts';
import { setup, teardown, promoted } from '../../../test/support/client-fixture.ts';

// A failed assertion skips a test's own teardown: close whatever it left open.
test.after.each(closeAll);

test('reports: keys over the local threshold, counts since the last report', async () => {
  const s = await setup({}, { local: [10] });
  for (let i = 0; i < 9; i++) s.hk.track('cool');
  for (let i = 0; i < 25; i++) s.hk.track('warm');
  const report = await s.sock.next(MsgType.Report);
  assert.equal(report.keys, ['warm']);
  assert.is(report.counts[0]!, 25 - 1); // the first access only entered the sketch
  for (let i = 0; i < 5; i++) s.hk.track('warm');
  const next = await s.sock.next(MsgType.Report);
  assert.equal(next.keys, ['warm']);
  assert.equal(next.counts, [5]);
  assert.ok(s.hk.stats().reports >= 2);
  await teardown(s);
});

test('get() on a hot key counts exactly, also after its counter slot went to another key', async () => {
  const s = await setup({}, { local: [10] });
  await promoted(s);
  /** report counts summed per key until every key in `keys` was reported (all accesses precede) */
  const reported = async (keys: string[]) => {
    const sums = new Map<string, number>();
    while (!keys.every((k) => sums.has(k))) {
      const report = await s.sock.next(MsgType.Report);
      report.keys.forEach((k, i) => sums.set(k, (sums.get(k) ?? 0) + report.counts[i]!));
    }
    return sums;
  };
  // 'ctl' is counted by track() alone: a hot key's get() must count the same
  for (let i = 0; i < 25; i++) await s.hk.get('k', () => 'v');
  for (let i = 0; i < 25; i++) s.hk.track('ctl');
  let sums = await reported(['k', 'ctl']);
  assert.ok(sums.get('ctl')! >= 10, `ctl ${sums.get('ctl')}`);
  assert.is(sums.get('k'), sums.get('ctl'));
  assert.ok(s.hk.stats().hits >= 20);
  // the window empties: both slots are released, then taken by two new keys
  s.clock.t = 5000;
  await waitFor('hk.stats().candidates === 0', () => s.hk.stats().candidates === 0);
  for (let i = 0; i < 12; i++) s.hk.track('other-1');
  for (let i = 0; i < 12; i++) s.hk.track('other-2');
  for (let i = 0; i < 15; i++) await s.hk.get('k', () => 'v');
  for (let i = 0; i < 15; i++) s.hk.track('ctl');
  sums = await reported(['k', 'ctl', 'other-1', 'other-2']);
  assert.is(sums.get('k'), sums.get('ctl'));
  assert.is(sums.get('other-1'), sums.get('other-2'), "no access of k was counted in its old slot's new key");
  assert.ok(s.hk.isHot('k'));
  await teardown(s);
});

test('a key reaching its threshold is reported at once; early reports are spaced, steady keys wait', async () => {
  // no regular flush within the test: every report here is an early one
  const s = await setup({ flushIntervalMs: 60_000 }, { local: [10] });
  s.clock.t = 1000;
  for (let i = 0; i < 11; i++) s.hk.track('a'); // the first access only enters the sketch
  let report = await s.sock.next(MsgType.Report);
  assert.equal(report.keys, ['a']);
  assert.equal(report.counts, [10]);
  // 5 ms later (injected clock) another key crosses: its report waits for the 20 ms gap
  s.clock.t = 1005;
  for (let i = 0; i < 3; i++) s.hk.track('a'); // not at a's next level (20): not urgent
  for (let i = 0; i < 11; i++) s.hk.track('b');
  // the injected clock stands still, so no real wait can make the report due: a short one
  // only gives a wrong implementation the chance to send it
  await delay(40);
  assert.is(s.hk.stats().reports, 1);
  s.clock.t = 1020;
  report = await s.sock.next(MsgType.Report);
  assert.equal(report.keys, ['b'], "a's 3 new accesses wait for the regular flush");
  assert.equal(report.counts, [10]);
  assert.is(s.hk.stats().reports, 2);
  await teardown(s);
});

test('Config replaces rules and local thresholds; counted keys get their new rule', async () => {
  const s = await setup({}, { local: [1000] });
  for (let i = 0; i < 6; i++) s.hk.track('item:1');
  for (let i = 0; i < 6; i++) s.hk.track('user:1');
  const rule = { ...RULE_DEFAULTS, threshold: 100 };
  s.sock.send({
    t: MsgType.Config,
    rules: [
      { match: 'item:*', ...rule },
      { match: 'slow:*', ...rule, windowMs: 10_000 },
    ],
    local: [3, 20],
    instances: 4,
  });
  await waitFor('hk.rules().length === 2', () => s.hk.rules().length === 2);
  assert.is(s.hk.stats().instances, 4);
  s.hk.track('user:1');
  s.hk.track('item:1');
  for (let i = 0; i < 3; i++) s.hk.track('slow:1'); // 20 per 10 s is 2 per 1 s: reported at 2
  // The real 10 ms tick may fall between the Config and the accesses above, so item:1 can come
  // in two reports (its pre-Config counts, then the last one): add up every report.
  const sums = new Map<string, number>();
  while (!sums.has('slow:1') || !sums.has('item:1')) {
    const report = await s.sock.next(MsgType.Report);
    report.keys.forEach((k, i) => sums.set(k, (sums.get(k) ?? 0) + report.counts[i]!));
  }
  assert.equal([...sums.keys()].sort(), ['item:1', 'slow:1'], 'user:1 matches no rule any more');
  // item:1 is reported at its new threshold (3) only because the counts before the Config carried
  // over under its new rule; at most 6 (7 accesses, the first only in the sketch)
  const item = sums.get('item:1')!;
  assert.ok(item >= 1 && item <= 6, `item:1 ${item}`);
  assert.is(sums.get('slow:1'), 2);
  await teardown(s);
});

test.run();
