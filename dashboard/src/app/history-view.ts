/**
 * Hot-key history: the top keys of the last hour or day, folded from the history stream, with
 * CSV export of the summary and of the raw events.
 */
import type { FeedEvent } from '@hotkey/sdk/feed-protocol';
import { api, ApiError, listOf } from './api.ts';
import { toCsv } from './csv.ts';
import { el, setText } from './element.ts';
import type { FeedState } from './feed-state.ts';
import { formatDateTime, formatDuration, formatQps } from './format.ts';
import { summarizeHistory, type KeySummary } from './history-model.ts';
import type { View } from './view.ts';

const RANGES = { '1h': 3600_000, '6h': 6 * 3600_000, '24h': 24 * 3600_000 } as const;
type Range = keyof typeof RANGES;
/** events fetched for one summary: bounded, the page must stay responsive */
const FETCH_LIMIT = 10_000;

function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }));
  const a = el('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export class HistoryView implements View {
  readonly element: HTMLElement;
  readonly #state: FeedState;
  #range: Range = '1h';
  #events: FeedEvent[] = [];
  #summary: KeySummary[] = [];
  readonly #app: HTMLSelectElement;
  readonly #body: HTMLTableSectionElement;
  readonly #status: HTMLElement;
  readonly #rangeButtons: HTMLButtonElement[];
  #appsVersion = -1;

  constructor(state: FeedState) {
    this.#state = state;
    this.#app = el('select', { 'aria-label': 'history app' }, el('option', { value: '' }, 'All apps'));
    this.#app.addEventListener('change', () => void this.#load());
    this.#rangeButtons = (Object.keys(RANGES) as Range[]).map((r) =>
      el(
        'button',
        { class: 'seg', onclick: () => ((this.#range = r), void this.#load()), 'data-range': r },
        `Last ${r}`,
      ),
    );
    this.#body = el('tbody', { 'data-testid': 'history-body' });
    this.#status = el('span', { class: 'muted', 'data-testid': 'history-status' });
    const head = [
      'App',
      'Key',
      'Promotions',
      'Peak QPS',
      'Hot time',
      'Invalidations',
      'Mean detection',
      'First',
      'Last',
    ];
    this.element = el(
      'section',
      { class: 'view history-view' },
      el(
        'div',
        { class: 'toolbar' },
        el('span', { class: 'segs' }, ...this.#rangeButtons),
        this.#app,
        el('button', { onclick: () => void this.#load() }, 'Refresh'),
        this.#status,
        el('span', { class: 'grow' }),
        el('button', { onclick: () => this.#exportSummary(), 'data-testid': 'history-csv' }, 'Export top keys (CSV)'),
        el('button', { onclick: () => this.#exportEvents() }, 'Export events (CSV)'),
      ),
      el(
        'div',
        { class: 'scroll' },
        el(
          'table',
          { class: 'grid-table' },
          el('thead', {}, el('tr', {}, ...head.map((h, i) => el('th', { class: i >= 2 && i <= 6 ? 'num' : '' }, h)))),
          this.#body,
        ),
      ),
    );
  }

  show(): void {
    void this.#load();
  }
  hide(): void {}

  render(): void {
    if (this.#appsVersion === this.#state.versions.apps) return;
    this.#appsVersion = this.#state.versions.apps;
    const current = this.#app.value;
    this.#app.replaceChildren(
      el('option', { value: '' }, 'All apps'),
      ...this.#state.apps.map((a) => el('option', { value: a }, a)),
    );
    this.#app.value = current;
  }

  async #load(): Promise<void> {
    for (const b of this.#rangeButtons) b.classList.toggle('active', b.dataset.range === this.#range);
    const since = Date.now() - RANGES[this.#range];
    const app = this.#app.value;
    setText(this.#status, 'loading…');
    try {
      const query = new URLSearchParams({ since: String(since), limit: String(FETCH_LIMIT) });
      if (app) query.set('app', app);
      this.#events = listOf(await api.get(`/api/history?${query}`), 'events') as FeedEvent[];
    } catch (err) {
      setText(this.#status, `cannot load history: ${err instanceof ApiError ? err.message : String(err)}`);
      return;
    }
    this.#summary = summarizeHistory(this.#events, Date.now());
    setText(
      this.#status,
      `${this.#events.length} events${this.#events.length >= FETCH_LIMIT ? ' (limit reached: oldest left out)' : ''}, ${this.#summary.length} keys`,
    );
    this.#body.replaceChildren(
      ...(this.#summary.length
        ? this.#summary.map((s) =>
            el(
              'tr',
              {},
              el('td', {}, s.app),
              el(
                'td',
                { class: 'key' },
                el('a', { href: `#/key/${encodeURIComponent(s.app)}/${encodeURIComponent(s.key)}` }, s.key),
              ),
              el('td', { class: 'num' }, String(s.promotions)),
              el('td', { class: 'num' }, formatQps(s.peakQps)),
              el('td', { class: 'num' }, formatDuration(s.hotMs)),
              el('td', { class: 'num' }, String(s.invalidations)),
              el('td', { class: 'num' }, s.meanLatencyMs === undefined ? '—' : `${Math.round(s.meanLatencyMs)} ms`),
              el('td', { class: 'muted' }, formatDateTime(s.firstAt)),
              el('td', { class: 'muted' }, formatDateTime(s.lastAt)),
            ),
          )
        : [el('tr', {}, el('td', { colspan: 9, class: 'muted' }, 'no hot keys in this range'))]),
    );
  }

  #exportSummary(): void {
    const header = [
      'app',
      'key',
      'promotions',
      'peak_qps',
      'hot_ms',
      'invalidations',
      'mean_detection_ms',
      'first_at',
      'last_at',
    ];
    const rows = this.#summary.map((s) => [
      s.app,
      s.key,
      s.promotions,
      Math.round(s.peakQps),
      s.hotMs,
      s.invalidations,
      s.meanLatencyMs === undefined ? '' : Math.round(s.meanLatencyMs),
      new Date(s.firstAt).toISOString(),
      new Date(s.lastAt).toISOString(),
    ]);
    download(`hotkeys-top-${this.#range}.csv`, toCsv(header, rows));
  }

  #exportEvents(): void {
    const header = ['at', 'type', 'app', 'key', 'qps', 'latency_ms', 'reason', 'manual', 'hub'];
    const rows = this.#events.map((e) => [
      new Date(e.at).toISOString(),
      e.type,
      e.app,
      e.key,
      Math.round(e.qps),
      e.latencyMs,
      e.reason,
      e.manual,
      e.hub,
    ]);
    download(`hotkeys-events-${this.#range}.csv`, toCsv(header, rows));
  }
}
