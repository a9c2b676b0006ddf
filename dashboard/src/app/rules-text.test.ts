import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_RULE } from '@hotkey/sdk/rules';
import { checkRulesText, rulesToText } from './rules-text.ts';

test('valid rules come back with defaults filled', () => {
  const r = checkRulesText('[{"match":"item:*","threshold":50}]');
  assert.ok(r.ok);
  if (r.ok) assert.equal(r.rules, [{ ...DEFAULT_RULE, match: 'item:*', threshold: 50 }]);
  assert.ok(checkRulesText(rulesToText([DEFAULT_RULE])).ok);
});

test('bad JSON and bad rules name what is wrong', () => {
  const json = checkRulesText('[{"match":');
  assert.equal(json.ok, false);
  if (!json.ok) assert.is(json.field, 'json');
  const bad = checkRulesText('[{"match":"a","threshold":10},{"match":"b","threshold":-5}]');
  assert.equal(bad.ok, false);
  if (!bad.ok) {
    assert.is(bad.field, 'rules[1].threshold');
    assert.match(bad.message, /between/);
  }
  const unknown = checkRulesText('[{"match":"a","threshold":10,"treshold":3}]');
  if (!unknown.ok) assert.is(unknown.field, 'rules[0].treshold');
  else assert.unreachable('typo accepted');
});

test.run();
