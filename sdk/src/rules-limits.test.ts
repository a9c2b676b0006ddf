/** Rule fields of replica keys (`replicas`) and rate limits (`limit`): validation and sizing. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode, ValidationError } from './errors.ts';
import { localThreshold, parseRules, REPLICA_DEFAULTS, replicaCount } from './rules.ts';

function refusal(input: unknown): { field: string; code: string } {
  try {
    parseRules([input]);
  } catch (err) {
    assert.instance(err, ValidationError);
    return { field: (err as ValidationError).field, code: (err as ValidationError).code };
  }
  return assert.unreachable('accepted') as never;
}

test('bad replicas and limit fields are refused with HK_ERR_RULES naming the field', () => {
  const bad: [object, string][] = [
    [{ replicas: true }, 'rules[0].replicas'],
    [{ replicas: [] }, 'rules[0].replicas'],
    [{ replicas: { perNodeQps: 0 } }, 'rules[0].replicas.perNodeQps'],
    [{ replicas: { perNodeQps: 'x' } }, 'rules[0].replicas.perNodeQps'],
    [{ replicas: { factor: Number.NaN } }, 'rules[0].replicas.factor'],
    [{ replicas: { max: 1.5 } }, 'rules[0].replicas.max'],
    [{ replicas: { max: 65 } }, 'rules[0].replicas.max'],
    [{ replicas: { copies: 3 } }, 'rules[0].replicas.copies'],
    [{ limit: 0 }, 'rules[0].limit'],
    [{ limit: -5 }, 'rules[0].limit'],
    [{ limit: '100' }, 'rules[0].limit'],
    [{ limit: Number.POSITIVE_INFINITY }, 'rules[0].limit'],
    [{ limit: 2e9 }, 'rules[0].limit'],
  ];
  for (const [fields, field] of bad) {
    const r = refusal({ match: 'k', threshold: 10, ...fields });
    assert.is(r.field, field, JSON.stringify(fields));
    assert.is(r.code, ErrorCode.Rules);
  }
});

test('replica policy fields default one by one; false turns replicas off', () => {
  const [rule, off] = parseRules([
    { match: 'a', threshold: 10, cache: false, replicas: { perNodeQps: 1000 } },
    { match: 'b', threshold: 10, cache: false, replicas: false },
  ]);
  assert.equal(rule!.replicas, { ...REPLICA_DEFAULTS, perNodeQps: 1000 });
  assert.is(off!.replicas, false);
  assert.is(replicaCount(off!, 1e9), 1);
});

test('replicaCount: ceil(qps × factor / perNodeQps) copies, capped, only for uncached keys', () => {
  const [uncached, cached, capped] = parseRules([
    { match: 'a', threshold: 10, cache: false },
    { match: 'b', threshold: 10 },
    { match: 'c', threshold: 10, cache: false, replicas: { max: 3 } },
  ]);
  assert.is(replicaCount(uncached!, 20_000), 1); // 0.86 of a node
  assert.is(replicaCount(uncached!, 50_000), 3); // ceil(50000 × 1.5 / 35000)
  assert.is(replicaCount(uncached!, 0), 1);
  assert.is(replicaCount(cached!, 1e6), 1);
  assert.is(replicaCount(capped!, 1e6), 3);
});

test('a limit rule reports every access (local threshold 1)', () => {
  const [rule] = parseRules([{ match: 'api:*', threshold: 100_000, limit: 500 }]);
  assert.is(rule!.limit, 500);
  assert.is(localThreshold(rule!, 3), 1);
});

test.run();
