/**
 * Events as they happen, newest first: promotions (with detection latency), demotions,
 * invalidations. Filters by type and text; shows latency percentiles of recent promotions.
 * Renders at most MAX_SHOWN rows however fast events arrive.
 */
import type { FeedEvent } from '@hotkey/sdk/feed-protocol';
import { el, setText } from './element.ts';
import { eventHeader, eventRow } from './event-row.ts';
import type { FeedState } from './feed-state.ts';
import type { View } from './view.ts';

const MAX_SHOWN = 300;

/** p-th percentile (0..1) of the values, nearest rank; undefined for none */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

export class EventsView implements View {
  readonly element: HTMLElement;
  readonly #state: FeedState;
  readonly #types = new Set<FeedEvent['type']>(['promote', 'demote', 'invalidate']);
  #filter = '';
  #version = -1;
  readonly #body: HTMLTableSectionElement;
  readonly #summary: HTMLElement;

  constructor(state: FeedState) {
    this.#state = state;
    this.#body = el('tbody', { 'data-testid': 'events-body' });
    this.#summary = el('span', { class: 'muted', 'data-testid': 'events-summary' });
    const toggles = (['promote', 'demote', 'invalidate'] as const).map((type) => {
      const box = el('input', { type: 'checkbox', checked: true });
      box.addEventListener('change', () => {
        if (box.checked) this.#types.add(type);
        else this.#types.delete(type);
        this.#version = -1;
      });
      return el('label', { class: `toggle b-${type}` }, box, ` ${type}`);
    });
    const filter = el('input', { type: 'search', placeholder: 'Filter app or key…', class: 'filter' });
    filter.addEventListener('input', () => {
      this.#filter = filter.value.trim().toLowerCase();
      this.#version = -1;
    });
    this.element = el(
      'section',
      { class: 'view events-view' },
      el('div', { class: 'toolbar' }, filter, ...toggles, el('span', { class: 'grow' }), this.#summary),
      el('div', { class: 'scroll' }, el('table', { class: 'grid-table' }, eventHeader(), this.#body)),
    );
  }

  show(): void {
    this.#version = -1;
  }
  hide(): void {}

  render(): void {
    if (this.#version === this.#state.versions.events) return;
    this.#version = this.#state.versions.events;
    const events = this.#state.events;
    const shown: FeedEvent[] = [];
    for (let i = events.length - 1; i >= 0 && shown.length < MAX_SHOWN; i--) {
      const e = events[i]!;
      if (!this.#types.has(e.type)) continue;
      if (this.#filter && !e.key.toLowerCase().includes(this.#filter) && !e.app.toLowerCase().includes(this.#filter))
        continue;
      shown.push(e);
    }
    this.#body.replaceChildren(
      ...(shown.length
        ? shown.map((e) => eventRow(e))
        : [el('tr', {}, el('td', { colspan: 7, class: 'muted' }, 'no events yet'))]),
    );
    const latencies = events
      .filter((e) => e.type === 'promote' && e.latencyMs !== undefined)
      .slice(-200)
      .map((e) => e.latencyMs!);
    const p50 = percentile(latencies, 0.5);
    const p99 = percentile(latencies, 0.99);
    setText(
      this.#summary,
      p50 === undefined
        ? `${events.length} events`
        : `${events.length} events · detection latency of last ${latencies.length} promotions: p50 ${Math.round(p50)} ms, p99 ${Math.round(p99!)} ms`,
    );
  }
}
