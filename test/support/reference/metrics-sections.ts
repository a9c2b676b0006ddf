/**
 * The metrics tables, read from the code that registers them: the hub's series catalogue
 * (CORE_FAMILIES), its histograms (a MetricsRegistry's prom-client registry), the series the server
 * adds (`addSeries({ name, type, help })` literals, and the notifier's, through startNotifications);
 * the SDK's from `metricsText()` of a client that never reached a hub.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { MetricsRegistry } from '../../../hub/src/http/metrics.ts';
import { CORE_FAMILIES } from '../../../hub/src/http/metric-series.ts';
import { startNotifications } from '../../../hub/src/server/notifications.ts';
import { HotKeyClient } from '../../../sdk/src/client/client.ts';
import { metricsText } from '../../../sdk/src/client/observe/metrics.ts';
import { cell, code, table } from './markdown.ts';

interface Series {
  name: string;
  type: string;
  labels: readonly string[];
  help: string;
  when?: string;
}

const WHEN: Record<string, string> = {
  feed: 'with the live feed',
  cluster: 'with `--redis`',
  admission: 'with a network server',
};

const silent = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

/** `x.addSeries({ name: '…', type: '…', help: '…' })` calls with literal fields in hub/src/server. */
function literalAddSeries(root: string): Series[] {
  const out: Series[] = [];
  const dir = 'hub/src/server';
  for (const name of readdirSync(join(root, dir))) {
    if (!name.endsWith('.ts') || name.endsWith('.test.ts')) continue;
    const sf = ts.createSourceFile(name, readFileSync(join(root, dir, name), 'utf8'), ts.ScriptTarget.ES2022, true);
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && node.expression.getText().endsWith('.addSeries')) {
        const arg = node.arguments[0];
        if (arg !== undefined && ts.isObjectLiteralExpression(arg)) {
          const f = (k: string) => {
            const p = arg.properties.find((x) => ts.isPropertyAssignment(x) && x.name.getText() === k);
            return p !== undefined && ts.isPropertyAssignment(p) && ts.isStringLiteralLike(p.initializer)
              ? p.initializer.text
              : undefined;
          };
          const [n, t, h] = [f('name'), f('type'), f('help')];
          if (n !== undefined && t !== undefined && h !== undefined)
            out.push({ name: n, type: t, labels: [], help: h });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return out;
}

/** The notifier's series, as startNotifications registers them (with stand-ins for the hub's parts). */
function notifierSeries(): Series[] {
  const out: Series[] = [];
  const notifier = startNotifications({
    hubId: 'reference',
    coordinator: { onEvent() {} } as never,
    live: { config: undefined, onApply() {} } as never,
    metrics: {
      addSeries: (s: { name: string; type: string; help: string }) => out.push({ ...s, labels: [] }),
    } as never,
    logger: silent as never,
  });
  notifier.setTargets([]);
  return out;
}

export function hubMetrics(root: string): string {
  const series: Series[] = CORE_FAMILIES.map((f) => ({
    name: f.name,
    type: f.type,
    labels: [],
    help: f.help,
    ...(f.group === undefined ? {} : { when: WHEN[f.group] }),
  }));
  for (const h of histograms()) series.push({ name: h.name, type: 'histogram', labels: h.labelNames, help: h.help });
  series.push(...literalAddSeries(root));
  series.push(...notifierSeries());
  series.sort((a, b) => a.name.localeCompare(b.name));
  return seriesTable(series);
}

interface HistogramShape {
  name: string;
  help: string;
  type: string;
  labelNames: string[];
  upperBounds: number[];
}

/** The histograms a hub's MetricsRegistry registers, as prom-client holds them. */
function histograms(): HistogramShape[] {
  const registry = new MetricsRegistry({ processMetrics: false }).registry;
  return (registry.getMetricsAsArray() as unknown as HistogramShape[]).filter((m) => m.type === 'histogram');
}

/** Each histogram's bucket upper bounds, in its unit (seconds or bytes). */
export function hubHistogramBuckets(): string {
  const rows = histograms().map((h) => [code(h.name), h.upperBounds.join(', ')]);
  return table(['histogram', 'bucket upper bounds'], rows);
}

function seriesTable(series: readonly Series[]): string {
  const rows = series.map((s) => [
    code(s.name),
    s.type,
    s.labels.map((l) => `\`${l}\``).join(', '),
    cell(s.when === undefined ? s.help : `${s.help} (${s.when})`),
  ]);
  return table(['series', 'type', 'labels', 'help'], rows);
}

/** The SDK's series, from the Prometheus text of a client that never reached a hub. */
export async function sdkMetrics(): Promise<string> {
  const hk = new HotKeyClient({
    app: 'reference',
    hubs: 'ws://127.0.0.1:9',
    reconnectMinMs: 60_000,
    reconnectMaxMs: 60_000,
  });
  hk.on('error', () => {});
  let text: string;
  try {
    text = metricsText(hk);
  } finally {
    await hk.close();
  }
  const byName = new Map<string, Series>();
  for (const line of text.split('\n')) {
    const help = /^# HELP (\S+) (.*)$/.exec(line);
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    const sample = /^([a-zA-Z_:][\w:]*)\{([^}]*)\}/.exec(line);
    const name = help?.[1] ?? type?.[1] ?? sample?.[1];
    if (name === undefined) continue;
    const s = byName.get(name) ?? { name, type: '', labels: [], help: '' };
    if (help?.[2] !== undefined) s.help = help[2];
    if (type?.[2] !== undefined) s.type = type[2];
    if (sample?.[2] !== undefined) s.labels = [...sample[2].matchAll(/(\w+)="/g)].map((m) => m[1] as string);
    byName.set(name, s);
  }
  return seriesTable([...byName.values()]);
}
