import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeServerMessage, encode } from '@hotkey/sdk/protocol';
import { parseRules, type Rule } from '@hotkey/sdk/rules';
import type { HotKeyView } from '../aggregate/aggregator.ts';
import { promoteMessage, replicaStepMessage } from './frames.ts';

const rules = parseRules([
  { match: 'r:*', threshold: 10, cache: false, replicas: { perNodeQps: 10, max: 3 } },
  { match: 'w:*', threshold: 10, cache: false, kind: 'write', replicas: { perNodeQps: 10, max: 3 } },
  { match: 'a:*', threshold: 10, cache: false, kind: 'any', replicas: { perNodeQps: 10, max: 3 } },
]);

function view(key: string, rule: Rule): HotKeyView {
  return { key, qps: 40, threshold: 10, since: 0, ttlMs: 5000.5, instances: 1, rule };
}

test('a replica-step Promote carries the same kind as the first Promote of its key', () => {
  for (const [key, rule] of [
    ['r:1', rules[0]!],
    ['w:1', rules[1]!],
    ['a:1', rules[2]!],
  ] as const) {
    const first = promoteMessage(key, rule, 40, 1000, 3);
    const step = replicaStepMessage(view(key, rule), 2000, 2);
    assert.is(step.kind, first.kind, key);
    // through the wire as the SDK reads it
    const wire = decodeServerMessage(encode({ ...step, seq: 1 })) as {
      kind?: string;
      replicas?: number;
      hotMs: number;
    };
    assert.is(wire.kind, rule.kind === 'read' || rule.kind === undefined ? undefined : rule.kind, key);
    assert.is(wire.replicas, 2);
    assert.is(wire.hotMs, 5001);
  }
});

test.run();
