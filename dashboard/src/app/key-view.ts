/**
 * Key detail: QPS over the last minutes (the owner hub's history of the key, fetched when the view
 * opens, then the page's own live samples), the rule that matches the key (fetched from the hub,
 * matched with the same RuleSet the hub uses), its promotion / demotion history (history API
 * plus live events), and a sparkline of its loads/s (reads reaching the store) over the last minute.
 */
import type { FeedEvent } from '@hotkey/sdk/feed-protocol';
import { parseRules, RULE_DEFAULTS, RuleSet, type Rule } from '@hotkey/sdk/rules';
import { api, ApiError, appPath, listOf } from './api.ts';
import { el, setText } from './element.ts';
import { eventHeader, eventRow } from './event-row.ts';
import type { FeedState } from './feed-state.ts';
import { formatAgo, formatDuration, formatQps } from './format.ts';
import type { KeyActions } from './key-actions.ts';
import { CHART_SPAN_MS, mergeQps, parseQpsHistory, type QpsHistory } from './key-qps.ts';
import { QpsChart } from './qps-chart.ts';
import type { QpsSeries } from './qps-series.ts';
import { decodeRouteArg } from './route-arg.ts';
import { rowId } from './row-id.ts';
import { drawSparkline, LOAD_SPARK_POINTS } from './sparkline.ts';
import type { View } from './view.ts';

export class KeyView implements View {
  readonly element: HTMLElement;
  readonly #state: FeedState;
  readonly #series: QpsSeries;
  readonly #actions: KeyActions;
  readonly #loadSeries: QpsSeries;
  readonly #loadSpark: HTMLCanvasElement;
  #lastLoadSample = 0;
  #app = '';
  #key = '';
  #rule: Rule | undefined;
  #past: FeedEvent[] = [];
  /** the owner hub's QPS history of the key, once loaded */
  #history: QpsHistory | undefined;
  #chart: QpsChart | undefined;
  readonly #title: HTMLElement;
  readonly #stats: HTMLElement;
  readonly #ruleBox: HTMLElement;
  readonly #chartHost: HTMLElement;
  readonly #chartNote: HTMLElement;
  readonly #events: HTMLTableSectionElement;
  #eventsVersion = -1;
  #lastSample = 0;
  /** the address did not decode: the view shows why and nothing else */
  #bad = false;
  readonly #error: HTMLElement;
  readonly #body: HTMLElement;

  constructor(state: FeedState, series: QpsSeries, actions: KeyActions, loadSeries: QpsSeries) {
    this.#state = state;
    this.#series = series;
    this.#actions = actions;
    this.#loadSeries = loadSeries;
    this.#loadSpark = el('canvas', { class: 'spark loads-spark', 'data-testid': 'key-loads-spark' });
    this.#title = el('h2', { class: 'key-title', 'data-testid': 'key-title' });
    this.#stats = el('div', { class: 'stats' });
    this.#ruleBox = el('div', { class: 'rule-box' });
    this.#chartHost = el('div', { class: 'chart', 'data-testid': 'key-chart' });
    this.#chartNote = el('span', { class: 'muted chart-note', 'data-testid': 'key-chart-note' });
    this.#events = el('tbody');
    this.#error = el('p', { class: 'error', 'data-testid': 'key-error', hidden: true });
    this.element = el(
      'section',
      { class: 'view key-view' },
      el(
        'div',
        { class: 'toolbar' },
        el('a', { href: '#/hot' }, '← Hot keys'),
        el('span', { class: 'grow' }),
        el(
          'button',
          { onclick: () => void this.#actions.run('promote', this.#app, this.#key), 'data-testid': 'key-promote' },
          'Promote',
        ),
        el(
          'button',
          {
            onclick: () => void this.#actions.run('invalidate', this.#app, this.#key),
            'data-testid': 'key-invalidate',
          },
          'Invalidate',
        ),
      ),
      this.#title,
      this.#error,
      (this.#body = el(
        'div',
        {},
        this.#stats,
        el(
          'div',
          { class: 'panel' },
          el('h3', {}, 'Loads/s, last 60 s ', el('span', { class: 'muted' }, '· loader calls across the SDKs')),
          this.#loadSpark,
        ),
        el('div', { class: 'panel' }, el('h3', {}, 'Cluster QPS, last 5 minutes ', this.#chartNote), this.#chartHost),
        el('div', { class: 'panel' }, el('h3', {}, 'Rule'), this.#ruleBox),
        el(
          'div',
          { class: 'panel' },
          el('h3', {}, 'Promotions, demotions and invalidations'),
          el('table', { class: 'grid-table' }, eventHeader(false), this.#events),
        ),
      )),
    );
  }

  show(arg: string[]): void {
    const app = decodeRouteArg(arg[0] ?? '');
    const key = decodeRouteArg(arg.slice(1).join('/'));
    this.#bad = app === undefined || key === undefined;
    this.#error.hidden = !this.#bad;
    this.#body.hidden = this.#bad;
    if (app === undefined || key === undefined) {
      this.#app = '';
      this.#key = '';
      this.#series.pin(undefined);
      this.#loadSeries.pin(undefined);
      setText(this.#title, 'Key not found');
      setText(
        this.#error,
        'This address does not name a key: its app or key is not valid percent-encoding. Open the key from the Hot keys list.',
      );
      return;
    }
    this.#app = app;
    this.#key = key;
    this.#series.pin(rowId(this.#app, this.#key));
    this.#loadSeries.pin(rowId(this.#app, this.#key));
    this.#lastLoadSample = -1;
    setText(this.#title, '');
    this.#title.append(el('span', { class: 'muted' }, `${this.#app} / `), this.#key);
    this.#rule = undefined;
    this.#past = [];
    this.#history = undefined;
    this.#eventsVersion = -1;
    this.#lastSample = -1;
    setText(this.#chartNote, '· loading history…');
    this.#ruleBox.replaceChildren(el('span', { class: 'muted' }, 'loading…'));
    this.#chart ??= new QpsChart(this.#chartHost);
    void this.#load(this.#app, this.#key);
  }

  hide(): void {
    this.#series.pin(undefined);
    this.#loadSeries.pin(undefined);
  }

  async #load(app: string, key: string): Promise<void> {
    const since = Date.now() - 24 * 3600_000;
    const [rules, history, qps] = await Promise.allSettled([
      api.get(appPath(app, 'rules')),
      api.get(`/api/history?app=${encodeURIComponent(app)}&since=${since}&limit=5000`),
      api.get(`${appPath(app, 'keys/qps')}?key=${encodeURIComponent(key)}`),
    ]);
    if (app !== this.#app || key !== this.#key) return; // the user moved on
    if (qps.status === 'fulfilled') {
      try {
        this.#history = parseQpsHistory(qps.value);
        setText(
          this.#chartNote,
          this.#history.times.length > 0
            ? `· kept by ${this.#history.hub}, then live`
            : '· not hot lately: live samples only',
        );
      } catch (err) {
        setText(this.#chartNote, `· no history: ${(err as Error).message}`);
      }
    } else {
      // the chart still fills from the live feed; say why the past is missing
      const err = qps.reason as ApiError;
      setText(this.#chartNote, `· no history (${err.code}): live samples only`);
    }
    this.#lastSample = -1; // redraw with the history
    if (rules.status === 'fulfilled') {
      const raw = listOf(rules.value, 'rules');
      let parsed: Rule[];
      try {
        parsed = parseRules(raw);
      } catch {
        parsed = raw as Rule[]; // the hub validated them; show them as they are
      }
      const set = new RuleSet(parsed);
      this.#rule = set.ruleFor(key);
      this.#ruleBox.replaceChildren(
        this.#rule
          ? ruleTable(this.#rule)
          : el('span', { class: 'muted' }, 'no rule matches this key: it is not detected'),
      );
    } else {
      const err = rules.reason as ApiError;
      this.#ruleBox.replaceChildren(el('span', { class: 'error' }, `cannot load rules: ${err.message}`));
    }
    if (history.status === 'fulfilled')
      this.#past = (listOf(history.value, 'events') as FeedEvent[]).filter((e) => e.key === key);
    this.#eventsVersion = -1;
  }

  render(now: number): void {
    if (this.#bad) return;
    const id = rowId(this.#app, this.#key);
    const row = this.#state.rows.get(id);
    const windowMs = row?.windowMs ?? this.#rule?.windowMs ?? RULE_DEFAULTS.windowMs;
    const threshold = row?.threshold ?? this.#rule?.threshold ?? 0;
    this.#stats.replaceChildren(
      stat('Status', row ? 'HOT' : 'not hot', row ? 'hot' : ''),
      stat('Cluster QPS', row ? formatQps(row.qps) : '—'),
      stat('Threshold', threshold ? `${formatQps(threshold)} / ${formatDuration(windowMs)}` : '—'),
      stat('Hot since', row ? formatAgo(row.since, now) : '—'),
      stat('Owner hub', row?.hub ?? '—'),
      stat('Instances reporting', row ? String(row.instances) : '—'),
      stat('Served locally', row?.localPct === undefined ? '—' : `${row.localPct.toFixed(1)} %`),
      stat('Loads/s (reads reaching the store)', row?.loadsPerSec === undefined ? '—' : formatQps(row.loadsPerSec)),
    );
    const times = this.#series.times(id);
    const last = times[times.length - 1] ?? 0;
    if (this.#chart && last !== this.#lastSample) {
      this.#lastSample = last;
      const data = mergeQps(this.#history, times, this.#series.values(id), now - CHART_SPAN_MS);
      this.#chart.update(data.times, data.values, (threshold * 1000) / windowMs);
      // for tests and curious users: how much of the curve came from the hub
      this.#chartHost.dataset.points = String(data.times.length);
      this.#chartHost.dataset.historyPoints = String(this.#history?.times.length ?? 0);
      this.#chartHost.dataset.firstAt = String(data.times[0] ?? 0);
    }
    this.#drawLoads(id);
    if (this.#eventsVersion !== this.#state.versions.events) {
      this.#eventsVersion = this.#state.versions.events;
      const seen = new Set(this.#past.map((e) => `${e.type}@${e.at}@${e.hub}`));
      const live = this.#state.events.filter(
        (e) => e.app === this.#app && e.key === this.#key && !seen.has(`${e.type}@${e.at}@${e.hub}`),
      );
      const all = [...this.#past, ...live].sort((a, b) => b.at - a.at).slice(0, 200);
      this.#events.replaceChildren(
        ...(all.length
          ? all.map((e) => eventRow(e, false))
          : [el('tr', {}, el('td', { colspan: 5, class: 'muted' }, 'no events for this key yet'))]),
      );
    }
  }

  /** The loads/s sparkline, once per sample; its data attributes let tests (and users) read it. */
  #drawLoads(id: string): void {
    const last = this.#loadSeries.times(id, 1)[0] ?? 0;
    if (last === this.#lastLoadSample) return;
    this.#lastLoadSample = last;
    const values = this.#loadSeries.values(id, LOAD_SPARK_POINTS);
    drawSparkline(this.#loadSpark, values, 0, LOAD_SPARK_POINTS);
    this.#loadSpark.dataset.points = String(values.length);
    this.#loadSpark.dataset.max = String(Math.max(0, ...values));
    this.#loadSpark.dataset.last = String(values[values.length - 1] ?? 0);
  }
}

function stat(label: string, value: string, cls = ''): HTMLElement {
  return el(
    'div',
    { class: `stat ${cls}` },
    el('div', { class: 'label' }, label),
    el('div', { class: 'value' }, value),
  );
}

function ruleTable(rule: Rule): HTMLElement {
  return el(
    'table',
    { class: 'kv' },
    el(
      'tbody',
      {},
      ...Object.entries(rule).map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', { class: 'mono' }, String(v)))),
    ),
  );
}
