/**
 * Live hot keys: a virtualised table (only rows in view are in the DOM, from a pool of row
 * elements), sortable by any column, filterable by text and app, each row with a QPS sparkline.
 * Redraws happen from the page's render loop, a few times a second, never per feed frame.
 */
import type { FeedHotRow } from '@hotkey/sdk/feed-protocol';
import { el, setText } from './element.ts';
import { formatAgo, formatQps } from './format.ts';
import {
  DEFAULT_QUERY,
  queryRows,
  readsSpared,
  visibleWindow,
  type SortColumn,
  type TableQuery,
} from './hot-table-model.ts';
import type { FeedState } from './feed-state.ts';
import type { QpsSeries } from './qps-series.ts';
import { rowId } from './row-id.ts';
import { drawSparkline, LOAD_SPARK_POINTS } from './sparkline.ts';
import type { View } from './view.ts';
import type { KeyActions } from './key-actions.ts';

const ROW_PX = 30;

/** the promoting rate in accesses per second (rules count per window) */
const perSecond = (row: FeedHotRow) => (row.threshold * 1000) / row.windowMs;
const SPARK_POINTS = 60;

const COLUMNS: { id: SortColumn | 'spark' | 'actions'; label: string; title?: string }[] = [
  { id: 'app', label: 'App' },
  { id: 'key', label: 'Key' },
  { id: 'qps', label: 'Cluster QPS' },
  { id: 'spark', label: 'Last 60 s' },
  {
    id: 'threshold',
    label: 'Threshold',
    title: 'accesses per rule window that promote the key, and how far over it the key runs',
  },
  { id: 'since', label: 'Hot since' },
  { id: 'hub', label: 'Owner hub' },
  { id: 'instances', label: 'Instances', title: 'SDK instances reporting the key' },
  {
    id: 'localPct',
    label: 'Served locally',
    title: "share of the key's reads the SDKs answered from their local caches (last second)",
  },
  { id: 'loadsPerSec', label: 'Loads/s', title: 'loader calls per second across the SDKs: reads reaching the store' },
  { id: 'actions', label: '' },
];

/** the kind badge beside a key: read-hot keys (the default) carry none */
const KIND_BADGE = { write: ['write', 'write-hot: promoted by writes'], any: ['r+w', 'promoted by reads and writes'] };

interface RowElements {
  root: HTMLElement;
  cells: HTMLElement[];
  keyName: HTMLElement;
  kind: HTMLElement;
  spark: HTMLCanvasElement;
  /** the loads/s cell's number and sparkline */
  loadsText: HTMLElement;
  loadsSpark: HTMLCanvasElement;
  id: string;
  /** index in the sorted list the slot shows, -1 when detached */
  index: number;
}

export class HotView implements View {
  readonly element: HTMLElement;
  readonly #state: FeedState;
  readonly #series: QpsSeries;
  readonly #loadSeries: QpsSeries;
  readonly #actions: KeyActions;
  #query: TableQuery = { ...DEFAULT_QUERY };
  #sorted: FeedHotRow[] = [];
  #sortedVersion = -1;
  #dirty = true;
  readonly #body: HTMLElement;
  readonly #spacer: HTMLElement;
  readonly #rowsHost: HTMLElement;
  readonly #pool: RowElements[] = [];
  readonly #count: HTMLElement;
  readonly #spared: HTMLElement;
  readonly #empty: HTMLElement;
  readonly #appSelect: HTMLSelectElement;
  readonly #head: HTMLElement;
  #appsVersion = -1;
  #seriesStamp = 0;
  #scrollFrame = 0;

  constructor(state: FeedState, series: QpsSeries, actions: KeyActions, loadSeries: QpsSeries) {
    this.#state = state;
    this.#series = series;
    this.#loadSeries = loadSeries;
    this.#actions = actions;
    const filter = el('input', {
      type: 'search',
      placeholder: 'Filter keys or apps…',
      'aria-label': 'filter',
      class: 'filter',
      'data-testid': 'hot-filter',
    });
    filter.addEventListener('input', () => this.#setQuery({ filter: filter.value }));
    this.#appSelect = el(
      'select',
      { 'aria-label': 'app', 'data-testid': 'hot-app' },
      el('option', { value: '' }, 'All apps'),
    );
    this.#appSelect.addEventListener('change', () => this.#setQuery({ app: this.#appSelect.value }));
    this.#count = el('span', { class: 'muted', 'data-testid': 'hot-count' });
    this.#spared = el('span', {
      class: 'muted',
      'data-testid': 'reads-spared',
      title: 'reads of the shown hot keys answered from local caches instead of the store',
    });
    this.#head = el('div', { class: 'vt-row vt-head', role: 'row' });
    for (const col of COLUMNS) {
      const cell = el('div', { class: `c-${col.id}`, role: 'columnheader', title: col.title }, col.label);
      if (col.id !== 'spark' && col.id !== 'actions') {
        const sortable = col.id;
        cell.classList.add('sortable');
        cell.addEventListener('click', () =>
          this.#setQuery({
            sort: sortable,
            descending:
              this.#query.sort === sortable
                ? !this.#query.descending
                : sortable !== 'app' && sortable !== 'key' && sortable !== 'hub',
          }),
        );
      }
      this.#head.append(cell);
    }
    this.#rowsHost = el('div', { class: 'vt-rows' });
    this.#spacer = el('div', { class: 'vt-spacer' }, this.#rowsHost);
    this.#empty = el(
      'div',
      { class: 'vt-empty muted' },
      "No hot keys right now. A key shows up here within a second of crossing its rule's threshold.",
    );
    this.#body = el('div', { class: 'vt-body', 'data-testid': 'hot-table' }, this.#empty, this.#spacer);
    // scrolling redraws the window on the next frame, outside the throttled loop: a 250 ms lag
    // would show blank bands. Only the visible rows are touched, nothing is re-sorted.
    this.#body.addEventListener(
      'scroll',
      () => {
        if (this.#scrollFrame) return;
        this.#scrollFrame = requestAnimationFrame(() => {
          this.#scrollFrame = 0;
          this.#draw(Date.now());
        });
      },
      { passive: true },
    );
    this.#rowsHost.addEventListener('click', (ev) => this.#onRowClick(ev));
    this.element = el(
      'section',
      { class: 'view hot-view' },
      el(
        'div',
        { class: 'toolbar' },
        filter,
        this.#appSelect,
        this.#count,
        this.#spared,
        el('span', { class: 'grow' }),
        actions.toolbar(),
      ),
      el('div', { class: 'vt', role: 'table' }, this.#head, this.#body),
    );
    new ResizeObserver(() => (this.#dirty = true)).observe(this.#body);
  }

  show(): void {
    this.#dirty = true;
  }
  hide(): void {}

  #setQuery(patch: Partial<TableQuery>): void {
    this.#query = { ...this.#query, ...patch };
    this.#sortedVersion = -1;
    this.#dirty = true;
  }

  #onRowClick(ev: Event): void {
    const target = ev.target as HTMLElement;
    const rowEl = target.closest<HTMLElement>('.vt-row');
    if (!rowEl) return;
    const row = this.#state.rows.get(rowEl.dataset.id ?? '');
    if (!row) return;
    const action = target.closest<HTMLElement>('[data-action]')?.dataset.action;
    if (action === 'invalidate') void this.#actions.run('invalidate', row.app, row.key);
    else location.hash = `#/key/${encodeURIComponent(row.app)}/${encodeURIComponent(row.key)}`;
  }

  render(now: number): void {
    const state = this.#state;
    if (this.#appsVersion !== state.versions.apps) {
      this.#appsVersion = state.versions.apps;
      const current = this.#appSelect.value;
      this.#appSelect.replaceChildren(
        el('option', { value: '' }, 'All apps'),
        ...state.apps.map((a) => el('option', { value: a }, a)),
      );
      this.#appSelect.value = state.apps.includes(current) ? current : '';
    }
    if (this.#sortedVersion !== state.versions.rows) {
      this.#sortedVersion = state.versions.rows;
      this.#sorted = queryRows(state.rows.values(), this.#query);
      this.#dirty = true;
      const shown = state.rows.size < state.hotTotal ? `${state.rows.size} of ${state.hotTotal}` : `${state.rows.size}`;
      setText(this.#count, `${this.#sorted.length} shown · ${shown} hot`);
      setText(this.#spared, `· ${formatQps(readsSpared(this.#sorted))} reads spared/s`);
      this.#empty.hidden = this.#sorted.length > 0;
    }
    for (const cell of this.#head.children) {
      const id = [...cell.classList].find((c) => c.startsWith('c-'))?.slice(2);
      cell.classList.toggle('sorted', id === this.#query.sort);
      cell.classList.toggle('desc', id === this.#query.sort && this.#query.descending);
    }
    // sparklines move once per sample even when no row changed
    const stamp = this.#series.times(this.#sorted[0] ? rowId(this.#sorted[0].app, this.#sorted[0].key) : '', 1)[0] ?? 0;
    if (!this.#dirty && stamp === this.#seriesStamp) return;
    this.#seriesStamp = stamp;
    this.#dirty = false;
    this.#draw(now, true);
  }

  /**
   * Row `i` of the sorted list always uses pool slot `i % pool.length` and sits at `i * ROW_PX`,
   * so scrolling by a few rows rewrites only the rows that came into view; a data refresh
   * (`full`) rewrites the visible rows' text where it changed and their sparklines.
   */
  #draw(now: number, full = false): void {
    const win = visibleWindow(this.#sorted.length, this.#body.scrollTop, this.#body.clientHeight || 600, ROW_PX);
    this.#spacer.style.height = `${win.total}px`;
    const needed = win.end - win.start;
    if (this.#pool.length < needed) {
      while (this.#pool.length < needed + 8) this.#pool.push(this.#makeRow());
      full = true; // slot assignment changed
    }
    const used = new Set<RowElements>();
    for (let i = win.start; i < win.end; i++) {
      const r = this.#pool[i % this.#pool.length]!;
      const row = this.#sorted[i]!;
      used.add(r);
      const id = rowId(row.app, row.key);
      if (!full && r.index === i && r.id === id) continue;
      r.index = i;
      r.id = id;
      r.root.dataset.id = id;
      r.root.style.transform = `translateY(${i * ROW_PX}px)`;
      if (r.root.parentNode !== this.#rowsHost) this.#rowsHost.append(r.root);
      const over = row.threshold > 0 ? row.qps / perSecond(row) : 0;
      r.root.classList.toggle('blazing', over >= 5);
      const [app, key, qps, , threshold, since, hub, instances, local] = r.cells;
      setText(app!, row.app);
      setText(r.keyName, row.key);
      key!.title = row.key;
      const badge = row.kind === undefined ? undefined : KIND_BADGE[row.kind];
      r.kind.hidden = badge === undefined;
      setText(r.kind, badge?.[0] ?? '');
      r.kind.title = badge?.[1] ?? '';
      setText(qps!, formatQps(row.qps));
      setText(
        threshold!,
        `${Number.isInteger(row.threshold) ? row.threshold : formatQps(row.threshold)}${row.windowMs === 1000 ? '/s' : `/${row.windowMs}ms`} (${over.toFixed(1)}×)`,
      );
      threshold!.title = `promoted at ${formatQps(perSecond(row))} accesses per second`;
      setText(since!, formatAgo(row.since, now));
      setText(hub!, row.hub);
      setText(instances!, String(row.instances));
      setText(local!, row.localPct === undefined ? '—' : `${row.localPct.toFixed(1)} %`);
      setText(r.loadsText, row.loadsPerSec === undefined ? '—' : formatQps(row.loadsPerSec));
      this.#drawSpark(r, row);
    }
    for (const r of this.#pool) {
      if (!used.has(r) && r.root.parentNode) {
        r.root.remove();
        r.index = -1;
      }
    }
  }

  #drawSpark(r: RowElements, row: FeedHotRow): void {
    const values = this.#series.values(r.id, SPARK_POINTS);
    // a row younger than one sample still shows its current value
    drawSparkline(r.spark, values.length > 0 ? values : [row.qps], perSecond(row), SPARK_POINTS);
    const loads = this.#loadSeries.values(r.id, LOAD_SPARK_POINTS);
    drawSparkline(r.loadsSpark, loads, 0, LOAD_SPARK_POINTS);
  }

  #makeRow(): RowElements {
    const cells = COLUMNS.map((c) => el('div', { class: `c-${c.id}`, role: 'cell' }));
    const spark = el('canvas', { class: 'spark', width: 120, height: 22 });
    cells[3]!.append(spark);
    const loadsText = el('span');
    const loadsSpark = el('canvas', { class: 'spark mini', width: 40, height: 16 });
    cells[COLUMNS.findIndex((c) => c.id === 'loadsPerSec')]!.append(loadsSpark, loadsText);
    const keyName = el('span', {});
    const kind = el('span', { class: 'badge kind', 'data-testid': 'kind-badge' });
    kind.hidden = true;
    cells[1]!.append(keyName, kind);
    cells[COLUMNS.length - 1]!.append(
      el(
        'button',
        { class: 'small', 'data-action': 'invalidate', title: 'Invalidate this key in every SDK (admin)' },
        'Invalidate',
      ),
    );
    const root = el('div', { class: 'vt-row', role: 'row', 'data-testid': 'hot-row' }, ...cells);
    return { root, cells, keyName, kind, spark, loadsText, loadsSpark, id: '', index: -1 };
  }
}
