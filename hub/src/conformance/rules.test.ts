import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HUB_RULES, Results } from './rules.ts';

test('a rule is ok once checked, broken for good once failed, not checked otherwise', () => {
  const r = new Results(HUB_RULES);
  r.pass('H1');
  r.fail('H2', 'a refused frame');
  r.pass('H2');
  assert.is(r.check('H3', false, 'close 1000'), false);
  r.skip('H4', 'not tried');
  r.pass('H6');
  r.partly('H6', 'no --token');
  r.partly('H7', 'no lease');
  const status = Object.fromEntries(r.list().map((x) => [x.id, [x.status, ...x.details]]));
  assert.equal(status.H1, ['ok']);
  assert.equal(status.H2, ['fail', 'a refused frame'], 'a later pass does not hide a failure');
  assert.equal(status.H3, ['fail', 'close 1000']);
  assert.equal(status.H4, ['skip', 'not tried']);
  assert.equal(status.H6, ['ok', 'not checked: no --token']);
  assert.equal(status.H7, ['skip', 'no lease']);
  assert.is(r.broken, true);
  const text = r.format('title');
  assert.match(text, /^title\nok {3}H1 {3}the first frame/);
  assert.match(text, /FAIL H2 .*\n {7}a refused frame\n/);
  assert.match(text, /2 hold, 2 broken, 13 not checked\n$/);
  assert.throws(() => r.pass('H99' as never), /unknown rule H99/);
});

test('details are bounded: a rule broken a thousand times keeps a few', () => {
  const r = new Results(HUB_RULES);
  for (let i = 0; i < 1000; i++) r.fail('H8', `gap ${i}`);
  assert.is(r.list().find((x) => x.id === 'H8')!.details.length, 8);
});

test.run();
