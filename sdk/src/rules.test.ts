import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_RULE, localThreshold, parseRules, RuleSet, rulesForPeers } from './rules.ts';
import { ErrorCode, ValidationError } from './errors.ts';

function fieldOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.instance(err, ValidationError);
    return (err as ValidationError).field;
  }
  return assert.unreachable('no error') as never;
}

test('defaults are filled in', () => {
  const [rule] = parseRules([{ match: 'item:*', threshold: 500 }]);
  assert.equal(rule, { ...DEFAULT_RULE, match: 'item:*', threshold: 500 });
});

test('validation names the field', () => {
  assert.is(
    fieldOf(() =>
      parseRules([
        { match: 'a', threshold: 1 },
        { match: 'b', threshold: 0 },
      ]),
    ),
    'rules[1].threshold',
  );
  assert.is(
    fieldOf(() => parseRules([{ match: '', threshold: 1 }])),
    'rules[0].match',
  );
  assert.is(
    fieldOf(() => parseRules([{ match: 'a', threshold: 1, windowMs: 'x' }])),
    'rules[0].windowMs',
  );
  assert.is(
    fieldOf(() => parseRules([{ match: 'a', threshold: 1, thresold: 2 }])),
    'rules[0].thresold',
  );
  assert.is(
    fieldOf(() => parseRules([{ match: 'a' }])),
    'rules[0].threshold',
  );
  assert.is(
    fieldOf(() =>
      parseRules([
        { match: 'a', threshold: 1 },
        { match: 'a', threshold: 2 },
      ]),
    ),
    'rules[1].match',
  );
  assert.is(
    fieldOf(() => parseRules([{ match: 'a', threshold: 1, demoteRatio: 2 }])),
    'rules[0].demoteRatio',
  );
  assert.is(
    fieldOf(() => parseRules({})),
    'rules',
  );
  assert.is(
    fieldOf(() => parseRules([null])),
    'rules[0]',
  );
});

test('a field in the wrong case is named with the field meant', () => {
  try {
    parseRules([{ match: 'a', threshold: 1, windowMS: 500 }]);
    assert.unreachable('accepted');
  } catch (err) {
    assert.instance(err, ValidationError);
    assert.is((err as ValidationError).message, 'rules[0].windowMS: unknown field (did you mean "windowMs"?)');
  }
});

test('push and share, its deprecated name, parse to the same rule; both differing is HK_ERR_RULES naming push', () => {
  const base = { match: 'item:*', threshold: 500 };
  const [pushed] = parseRules([{ ...base, push: true }]);
  assert.equal(pushed, { ...DEFAULT_RULE, ...base, push: true });
  assert.equal(parseRules([{ ...base, share: true }]), [pushed]);
  assert.equal(parseRules([{ ...base, push: true, share: true }]), [pushed], 'both, saying the same');
  assert.equal(parseRules([{ ...base, share: false }]), parseRules([base]));
  for (const both of [
    { push: true, share: false },
    { push: false, share: true },
  ]) {
    try {
      parseRules([{ ...base, ...both }]);
      assert.unreachable('accepted');
    } catch (err) {
      assert.instance(err, ValidationError);
      assert.is((err as ValidationError).code, ErrorCode.Rules);
      assert.is((err as ValidationError).field, 'rules[0].push');
      assert.match((err as ValidationError).message, /share, its deprecated name/);
    }
  }
  assert.is(
    fieldOf(() => parseRules([{ ...base, push: 'yes' }])),
    'rules[0].push',
  );
  assert.is(
    fieldOf(() => parseRules([{ ...base, share: 1 }])),
    'rules[0].share',
  );
});

test('rules travel to peers with push under its former name share, and read back the same', () => {
  const rules = parseRules([
    { match: 'a', threshold: 1, push: true },
    { match: 'b', threshold: 2 },
  ]);
  const sent = rulesForPeers(rules);
  assert.is(sent[0]?.share, true);
  assert.not.ok('push' in sent[0]!, 'a peer of the previous minor version refuses a field it does not know');
  assert.not.ok('share' in sent[1]! || 'push' in sent[1]!);
  assert.equal(parseRules(JSON.parse(JSON.stringify(sent))), rules);
  assert.is(rules[0]?.push, true, 'the rules given are left as they were');
});

test('most specific rule wins', () => {
  const set = new RuleSet(
    parseRules([
      { match: '*', threshold: 1 },
      { match: 'item:*', threshold: 2 },
      { match: 'item:1*', threshold: 3 },
      { match: 'item:42', threshold: 4 },
      { match: 'item:?2', threshold: 5 },
    ]),
  );
  assert.is(set.ruleFor('item:42')?.threshold, 4);
  assert.is(set.ruleFor('item:12')?.threshold, 3); // tie on literals and wildcards: the earlier rule wins
  assert.is(set.ruleFor('item:52')?.threshold, 5);
  assert.is(set.ruleFor('item:abc')?.threshold, 2);
  assert.is(set.ruleFor('user:1')?.threshold, 1);
});

test('no rules means the default rule; rules without a catch-all leave other keys undetected', () => {
  assert.is(new RuleSet([]).ruleFor('anything'), DEFAULT_RULE);
  const set = new RuleSet(parseRules([{ match: 'item:*', threshold: 9 }]));
  assert.is(set.ruleFor('user:1'), undefined);
  assert.is(set.match('user:1'), -1);
});

test('globs treat regex characters literally and keys like __proto__ safely', () => {
  const set = new RuleSet(
    parseRules([
      { match: 'a.b*', threshold: 1 },
      { match: '__proto__', threshold: 2 },
      { match: 'x(y)?', threshold: 3 },
    ]),
  );
  assert.is(set.match('axb1'), -1);
  assert.is(set.ruleFor('a.b1')?.threshold, 1);
  assert.is(set.ruleFor('__proto__')?.threshold, 2);
  assert.is(set.ruleFor('constructor'), undefined);
  assert.is(set.ruleFor('x(y)!')?.threshold, 3);
});

test('local threshold shrinks with instances and never reaches zero', () => {
  const rule = { ...DEFAULT_RULE, threshold: 1000 };
  assert.is(localThreshold(rule, 1), 200);
  assert.is(localThreshold(rule, 50), 4);
  assert.is(localThreshold(rule, 5000), 1);
  assert.is(localThreshold(rule, 0), 200);
});

test('kind, shards and coalescing: defaults, validation with the field named', () => {
  const [plain, write, any] = parseRules([
    { match: 'a', threshold: 1 },
    { match: 'stock:*', threshold: 1, kind: 'write', shards: 20 },
    { match: 'likes:*', threshold: 1, kind: 'any', coalesce: true, coalesceMs: 50 },
  ]);
  assert.is(plain!.kind, 'read');
  assert.is(plain!.shards, undefined);
  assert.is(write!.kind, 'write');
  assert.is(write!.shards, 20);
  assert.is(any!.coalesce, true);
  assert.is(any!.coalesceMs, 50);
  const refuses = (rule: object, field: string) => {
    try {
      parseRules([{ match: 'k', threshold: 1, ...rule }]);
    } catch (err) {
      assert.is((err as { field?: string }).field, field);
      assert.is((err as { code?: string }).code, 'HK_ERR_RULES');
      return;
    }
    assert.unreachable(`accepted ${JSON.stringify(rule)}`);
  };
  refuses({ kind: 'writes' }, 'rules[0].kind');
  refuses({ kind: 'write', shards: 1 }, 'rules[0].shards');
  refuses({ kind: 'write', shards: 2.5 }, 'rules[0].shards');
  refuses({ shards: 4 }, 'rules[0].shards'); // a read rule never promotes a write-hot key
  refuses({ coalesce: true }, 'rules[0].coalesce');
  refuses({ kind: 'write', coalesceMs: 10 }, 'rules[0].coalesceMs');
  refuses({ kind: 'write', coalesce: true, coalesceMs: 0 }, 'rules[0].coalesceMs');
  refuses({ kind: 'write', coalesce: true, shards: 4 }, 'rules[0].coalesce');
});

test.run();
