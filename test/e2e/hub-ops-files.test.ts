/**
 * The operator files shipped in the hub package (hub/ops/alerts.yml, hub/ops/grafana-dashboard.json)
 * against a real hub: a `hotkey-hub` process in a Redis cluster of one, driven so that every
 * series exists (a promotion, an acked invalidation, report frames), scraped at /metrics. Every
 * rule expression and panel query must parse as PromQL (the Prometheus project's own lezer
 * grammar) and use only metric names and labels that hub exports, plus what Prometheus adds
 * itself (`up`, `job`, `instance`).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parser } from '@prometheus-io/lezer-promql';
import { parse as parseYaml } from 'yaml';
import { MsgType } from '@hotkey/sdk/protocol';
import { parseExposition } from '../support/exposition.ts';
import { request } from '../support/http.ts';
import { HubProcess, writeConfig } from '../support/hub-process.ts';
import { RawClient } from '../support/raw-client.ts';
import { RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait.ts';

const OPS = new URL('../../hub/ops/', import.meta.url);
/** what Prometheus itself makes: the scrape's health and its target labels */
const PROMETHEUS_METRICS = new Set(['up']);
const PROMETHEUS_LABELS = new Set(['job', 'instance']);
/** Grafana's own variables, replaced by what they expand to before parsing */
const GRAFANA_VARS: [RegExp, string][] = [
  [/\$__(rate_)?interval|\$__range/g, '5m'],
  [/\$(job|instance)\b/g, '.*'],
];

/** metric name → the label names its samples carry */
type Exported = Map<string, Set<string>>;

/** What is wrong with `expr` against `exported`: syntax errors, unknown metrics, unknown labels. */
function problems(expr: string, exported: Exported): string[] {
  const out: string[] = [];
  const tree = parser.parse(expr);
  const metrics: string[] = [];
  const labels: string[] = [];
  tree.iterate({
    enter(node) {
      if (node.type.isError)
        out.push(`syntax error at ${node.from}: ${JSON.stringify(expr.slice(node.from, node.from + 20))}`);
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector')
        metrics.push(expr.slice(node.from, node.to));
      if (node.name === 'LabelName') labels.push(expr.slice(node.from, node.to));
    },
  });
  if (metrics.length === 0) out.push('selects no metric');
  const known = new Set(PROMETHEUS_LABELS);
  for (const m of metrics) {
    if (PROMETHEUS_METRICS.has(m)) continue;
    const l = exported.get(m);
    if (l === undefined) out.push(`metric ${m} is not exported by the hub`);
    else for (const name of l) known.add(name);
  }
  for (const l of labels) if (!known.has(l)) out.push(`label ${l} is on none of ${metrics.join(', ')}`);
  return out;
}

/** A Grafana variable query `label_values(<selector>, <label>)`: the selector checked as PromQL, the label on it. */
function variableProblems(query: string, exported: Exported): string[] {
  const m = /^label_values\((.+),\s*([a-zA-Z_]\w*)\)$/.exec(query);
  if (!m) return [`not a label_values() query: ${query}`];
  return problems(`${m[1]} and on (${m[2]}) ${m[1]}`, exported);
}

function grafanaExpr(expr: string): string {
  return GRAFANA_VARS.reduce((e, [re, to]) => e.replace(re, to), expr);
}

let redis: RedisServer;
let hub: HubProcess;
let exported: Exported;

test.before(async () => {
  redis = await RedisServer.start();
  const config = writeConfig({ apps: { shop: { rules: [{ match: 'item:*', threshold: 20 }] } } });
  hub = await HubProcess.start({ args: ['--config', config, '--redis', redis.url, '--node-id', 'ops-a'] });
  // traffic, so that every histogram has samples: a promotion (detection, fan-out), report
  // frames, an SDK invalidation acked by both instances
  const writer = await RawClient.join(hub.url, 'shop', { instance: 'w' });
  const reader = await RawClient.join(hub.url, 'shop', { instance: 'r' });
  writer.client.send({ t: MsgType.Report, keys: ['item:1'], counts: [100] });
  await writer.client.next(MsgType.Promote, 5000, (m) => m.key === 'item:1');
  writer.client.send({ t: MsgType.InvalidateRequest, id: 1, key: 'item:1' });
  for (const c of [writer.client, reader.client])
    c.send({ t: MsgType.Applied, seq: (await c.next(MsgType.Invalidate, 5000)).seq });
  await writer.client.next(MsgType.Ack, 5000);
  exported = await waitFor(
    'every histogram and the Redis gauge in /metrics',
    async () => {
      const { text } = await request(`${hub.httpUrl}/metrics`);
      const map: Exported = new Map();
      for (const s of parseExposition(text).samples) {
        const set = map.get(s.name) ?? new Set<string>();
        for (const l of Object.keys(s.labels)) set.add(l);
        map.set(s.name, set);
      }
      const ready =
        map.has('hotkey_detection_latency_seconds_bucket') &&
        map.has('hotkey_invalidation_ack_seconds_bucket') &&
        /^hotkey_redis_up 1$/m.test(text);
      return ready ? map : undefined;
    },
    15_000,
    100,
  );
  writer.client.close();
  reader.client.close();
});
test.after(async () => {
  await hub?.stop();
  await redis?.stop();
});

test('the checker itself: a misspelled metric, an unknown label and bad syntax are caught', () => {
  assert.equal(problems('sum by (app) (rate(hotkey_detection_latency_seconds_bucket[5m]))', exported), []);
  assert.equal(problems('up{job="hotkey-hub"} == 0', exported), []);
  assert.match(problems('rate(hotkey_promotion_total[5m]) > 1', exported).join(), /hotkey_promotion_total/);
  assert.match(problems('sum by (ap) (hotkey_hot_keys)', exported).join(), /label ap/);
  assert.match(problems('hotkey_hot_keys{application="shop"}', exported).join(), /label application/);
  assert.match(problems('rate(hotkey_promotions_total[5m]', exported).join(), /syntax error/);
  assert.match(variableProblems('label_values(hotkey_connection, instance)', exported).join(), /hotkey_connection/);
});

test('alerts.yml: well-formed rules whose expressions parse and use only exported metrics and labels', () => {
  const doc = parseYaml(readFileSync(new URL('alerts.yml', OPS), 'utf8')) as {
    groups: { name: string; rules: Record<string, unknown>[] }[];
  };
  assert.ok(Array.isArray(doc.groups) && doc.groups.length > 0);
  const names = new Set<string>();
  for (const group of doc.groups) {
    for (const rule of group.rules) {
      const name = String(rule.alert);
      assert.match(name, /^Hotkey[A-Z]\w+$/, `alert name ${name}`);
      assert.not.ok(names.has(name), `one alert called ${name}`);
      names.add(name);
      assert.type(rule.expr, 'string', `${name}.expr`);
      assert.match(String(rule.for), /^\d+[smh]$/, `${name}.for`);
      const labels = rule.labels as Record<string, string>;
      assert.ok(['critical', 'warning', 'info'].includes(labels?.severity ?? ''), `${name}.labels.severity`);
      assert.type((rule.annotations as Record<string, string>)?.summary, 'string', `${name}.annotations.summary`);
      assert.equal(problems(rule.expr as string, exported), [], `${name}: ${rule.expr}`);
    }
  }
  // the operators' must-haves are covered
  for (const name of [
    'HotkeyHubDown',
    'HotkeyRedisDown',
    'HotkeyHotKeyStorm',
    'HotkeyInstancesFenced',
    'HotkeySlowConsumers',
    'HotkeyKeyTableEvictions',
  ])
    assert.ok(names.has(name), `alert ${name}`);
});

test('grafana-dashboard.json: every panel query and variable parses and uses only exported metrics and labels', () => {
  const dash = JSON.parse(readFileSync(new URL('grafana-dashboard.json', OPS), 'utf8')) as {
    uid: string;
    panels: { title: string; type: string; targets?: { expr: string; refId: string }[]; panels?: unknown[] }[];
    templating: { list: { name: string; type: string; query: string | { query: string } }[] };
  };
  assert.type(dash.uid, 'string');
  let queries = 0;
  for (const panel of dash.panels) {
    if (panel.type === 'row') continue;
    assert.ok((panel.targets ?? []).length > 0, `panel "${panel.title}" has queries`);
    for (const target of panel.targets ?? []) {
      queries++;
      assert.equal(
        problems(grafanaExpr(target.expr), exported),
        [],
        `"${panel.title}" ${target.refId}: ${target.expr}`,
      );
    }
  }
  assert.ok(queries >= 20, `${queries} queries`);
  for (const v of dash.templating.list) {
    if (v.type !== 'query') continue;
    const q = typeof v.query === 'string' ? v.query : v.query.query;
    assert.equal(variableProblems(grafanaExpr(q), exported), [], `variable ${v.name}: ${q}`);
  }
});

test('both files ship in the hub package', () => {
  const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../package.json', OPS)), 'utf8')) as { files: string[] };
  assert.ok(pkg.files.includes('ops'), 'hub/package.json files lists ops/');
});

test.run();
