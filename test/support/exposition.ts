/**
 * A strict reader of the Prometheus text exposition format (0.0.4), for tests of the hub's /metrics
 * and the SDK's metricsText(): every line must be HELP, TYPE or a sample of a declared family.
 */
import * as assert from 'uvu/assert';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
export interface Exposition {
  types: Map<string, string>;
  samples: Sample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: -?\\d+)?$`);
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/;

/** A strict reader of the text format (0.0.4): throws on any line that is not HELP, TYPE or a sample of a declared family. */
export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  assert.ok(text.endsWith('\n'), 'ends with a newline');
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      assert.match(meta[2]!, new RegExp(`^${NAME}$`), line);
      if (meta[1] === 'TYPE') {
        assert.ok(['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(meta[3]!), line);
        assert.not.ok(types.has(meta[2]!), `one TYPE per family: ${line}`);
        types.set(meta[2]!, meta[3]!);
      }
      continue;
    }
    assert.not.ok(line.startsWith('#'), `unknown comment: ${line}`);
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    let rest = m[2] ?? '';
    while (rest !== '') {
      const l = LABEL.exec(rest);
      if (!l) throw new Error(`bad labels in ${JSON.stringify(line)}`);
      labels[l[1]!] = l[2]!;
      rest = rest.slice(l[0].length);
    }
    // Prometheus reads NaN in any case (prom-client writes "Nan" for an empty event-loop histogram)
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : /^nan$/i.test(m[3]!) ? NaN : Number(m[3]);
    if (Number.isNaN(value) && !/^nan$/i.test(m[3]!)) throw new Error(`bad value in ${JSON.stringify(line)}`);
    const name = m[1]!;
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count|total|created)$/, '');
    assert.ok(types.has(family) || types.has(name), `sample of an undeclared family: ${line}`);
    samples.push({ name, labels, value });
  }
  return { types, samples };
}
