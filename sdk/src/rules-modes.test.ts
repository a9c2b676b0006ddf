import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { localThreshold, parseRules } from './rules.ts';

const fails = (rules: unknown, message: string) => {
  try {
    parseRules(rules);
  } catch (err) {
    assert.is((err as Error).message, message);
    assert.is((err as { code?: string }).code, 'HK_ERR_RULES');
    return;
  }
  assert.unreachable(`accepted ${JSON.stringify(rules)}`);
};

test('baseline mode: defaults, derived threshold, and the round trip of what the hub writes back', () => {
  const [rule] = parseRules([{ match: 'item:*', mode: 'baseline', minQps: 25, windowMs: 2000 }]);
  assert.equal(rule, {
    match: 'item:*',
    threshold: 50,
    windowMs: 2000,
    hotMs: 30_000,
    cacheTtlMs: 5000,
    cache: true,
    demoteRatio: 0.5,
    demoteWindows: 3,
    kind: 'read',
    mode: 'baseline',
    minQps: 25,
    factor: 3,
    sigma: 0,
    baselineWindows: 30,
  });
  assert.equal(parseRules(JSON.parse(JSON.stringify([rule]))), [rule]);
});

test('topk mode: k is required, threshold derived from minQps (default 10/s)', () => {
  const [rule] = parseRules([{ match: '*', mode: 'topk', k: 50 }]);
  assert.is(rule!.k, 50);
  assert.is(rule!.minQps, 10);
  assert.is(rule!.threshold, 10);
  fails([{ match: '*', mode: 'topk' }], "rules[0].k: is required in mode 'topk'");
  fails([{ match: '*', mode: 'topk', k: 0 }], 'rules[0].k: must be between 1 and 10000');
  fails([{ match: '*', mode: 'topk', k: 2.5 }], 'rules[0].k: must be an integer');
});

test('mode fields are validated with the field named', () => {
  fails([{ match: '*', mode: 'smart' }], "rules[0].mode: must be one of 'fixed', 'baseline', 'topk'");
  fails([{ match: '*', mode: 'baseline', factor: 1 }], 'rules[0].factor: must be between 1.01 and 1000000');
  fails([{ match: '*', mode: 'baseline', factor: '3' }], 'rules[0].factor: must be a number');
  fails([{ match: '*', mode: 'baseline', sigma: -1 }], 'rules[0].sigma: must be between 0 and 1000');
  fails([{ match: '*', mode: 'baseline', minQps: 0 }], 'rules[0].minQps: must be between 0.01 and 1000000000');
  fails(
    [{ match: '*', mode: 'baseline', baselineWindows: 1 }],
    'rules[0].baselineWindows: must be between 2 and 10000',
  );
  fails([{ match: '*', mode: 'baseline', k: 5 }], "rules[0].k: is not used in mode 'baseline'");
  fails([{ match: '*', threshold: 5, factor: 2 }], "rules[0].factor: is not used in mode 'fixed'");
  fails([{ match: '*', mode: 'topk', k: 5, sigma: 2 }], "rules[0].sigma: is not used in mode 'topk'");
  fails(
    [{ match: '*', mode: 'baseline', threshold: 7 }],
    "rules[0].threshold: is derived in mode 'baseline' (ceil(minQps × windowMs / 1000) = 10); omit it",
  );
  fails([{ match: '*', mode: 'baseline', minqps: 7 }], 'rules[0].minqps: unknown field (did you mean "minQps"?)');
  fails([{ match: '*' }], 'rules[0].threshold: is required');
});

test('pre-declared windows: ISO dates or ms, both or neither, until after from, a glob with a literal', () => {
  const [rule] = parseRules([
    { match: 'sale:*', threshold: 100, hotFrom: '2026-11-30T20:00:00Z', hotUntil: '2026-11-30T20:30:00+00:00' },
  ]);
  assert.is(rule!.hotFrom, Date.UTC(2026, 10, 30, 20, 0));
  assert.is(rule!.hotUntil, Date.UTC(2026, 10, 30, 20, 30));
  assert.equal(parseRules(JSON.parse(JSON.stringify([rule]))), [rule]);
  fails([{ match: 'a', threshold: 1, hotFrom: 5 }], 'rules[0].hotUntil: is required with hotFrom');
  fails(
    [{ match: 'a', threshold: 1, hotFrom: 'tomorrow', hotUntil: 10 }],
    'rules[0].hotFrom: must be an ISO 8601 date with a time zone (2026-11-30T20:00:00Z) or ms since epoch',
  );
  fails(
    [{ match: 'a', threshold: 1, hotFrom: '2026-11-30T20:00:00', hotUntil: 10 }],
    'rules[0].hotFrom: must be an ISO 8601 date with a time zone (2026-11-30T20:00:00Z) or ms since epoch',
  );
  fails(
    [{ match: 'a', threshold: 1, hotFrom: '2026-02-30T20:00:00Z', hotUntil: '2026-03-30T20:00:00Z' }],
    'rules[0].hotFrom: is not a valid date',
  );
  fails([{ match: 'a', threshold: 1, hotFrom: 2000, hotUntil: 1000 }], 'rules[0].hotUntil: must be after hotFrom');
  fails(
    [{ match: '*?*', threshold: 1, hotFrom: 1000, hotUntil: 2000 }],
    'rules[0].match: a pre-declared glob needs at least one literal character',
  );
});

test('localThreshold is 1 inside a pre-declared window, as usual outside it', () => {
  const [rule] = parseRules([{ match: 'sale:*', threshold: 1000, hotFrom: 1000, hotUntil: 2000 }]);
  assert.is(localThreshold(rule!, 10, 0.2, 500), 20);
  assert.is(localThreshold(rule!, 10, 0.2, 1500), 1);
  assert.is(localThreshold(rule!, 10, 0.2, 2000), 20);
  assert.is(localThreshold(rule!, 10), 20, 'no time given: the usual threshold');
});

test.run();
