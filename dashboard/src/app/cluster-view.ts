/** Cluster: every hub (ingest, connections, memory, Redis) and every SDK instance per app. */
import type { FeedInstance } from '@hotkey/sdk/feed-protocol';
import { el } from './element.ts';
import type { FeedState } from './feed-state.ts';
import { formatAgo, formatBytes, formatDuration, formatQps } from './format.ts';
import type { View } from './view.ts';

/** SDK instances, once per (app, instance), with every hub each one is connected to. */
export interface InstanceLine {
  app: string;
  instance: string;
  host: string;
  sdk: string;
  hubs: string[];
  lastReport: number;
}

export function groupInstances(connections: readonly FeedInstance[]): InstanceLine[] {
  const lines = new Map<string, InstanceLine>();
  for (const c of connections) {
    const id = `${c.app}\u0000${c.instance}`;
    const line = lines.get(id);
    if (!line)
      lines.set(id, {
        app: c.app,
        instance: c.instance,
        host: c.host,
        sdk: c.sdk,
        hubs: [c.hub],
        lastReport: c.lastReport,
      });
    else {
      if (!line.hubs.includes(c.hub)) line.hubs.push(c.hub);
      line.lastReport = Math.max(line.lastReport, c.lastReport);
    }
  }
  return [...lines.values()].sort((a, b) =>
    a.app < b.app ? -1 : a.app > b.app ? 1 : a.instance < b.instance ? -1 : 1,
  );
}

const MAX_INSTANCES_SHOWN = 1000;

export class ClusterView implements View {
  readonly element: HTMLElement;
  readonly #state: FeedState;
  readonly #hubs: HTMLTableSectionElement;
  readonly #instances: HTMLTableSectionElement;
  readonly #instanceCount: HTMLElement;
  #lastDraw = 0;

  constructor(state: FeedState) {
    this.#state = state;
    this.#hubs = el('tbody', { 'data-testid': 'hubs-body' });
    this.#instances = el('tbody', { 'data-testid': 'instances-body' });
    this.#instanceCount = el('span', { class: 'muted' });
    // a trailing '#' marks a numeric column: right-aligned like its values
    const head = (...names: string[]) =>
      el(
        'thead',
        {},
        el('tr', {}, ...names.map((n) => el('th', { class: n.endsWith('#') ? 'num' : '' }, n.replace(/#$/, '')))),
      );
    this.element = el(
      'section',
      { class: 'view cluster-view' },
      el(
        'div',
        { class: 'panel' },
        el('h3', {}, 'Hubs'),
        el(
          'table',
          { class: 'grid-table' },
          head(
            'Hub',
            'URL',
            'Up',
            'Ingest (records/s)#',
            'Connections#',
            'Hot keys#',
            'Heap#',
            'RSS#',
            'Redis',
            'Status age',
          ),
          this.#hubs,
        ),
      ),
      el(
        'div',
        { class: 'panel' },
        el('h3', {}, 'SDK instances ', this.#instanceCount),
        el(
          'div',
          { class: 'scroll' },
          el(
            'table',
            { class: 'grid-table' },
            head('App', 'Instance', 'Host', 'SDK', 'Connected hubs', 'Last report'),
            this.#instances,
          ),
        ),
      ),
    );
  }

  show(): void {
    this.#lastDraw = 0;
  }
  hide(): void {}

  render(now: number): void {
    // ages tick every second even without new frames
    if (now - this.#lastDraw < 1000) return;
    this.#lastDraw = now;
    const s = this.#state;
    this.#hubs.replaceChildren(
      ...s.hubs.map((h) =>
        el(
          'tr',
          { class: h.id === s.hub ? 'self' : '' },
          el(
            'td',
            { class: 'mono' },
            h.id,
            h.id === s.hub ? el('span', { class: 'badge self-badge' }, 'this hub') : null,
          ),
          el('td', { class: 'mono muted' }, h.url || '—'),
          el('td', {}, formatDuration(now - h.startedAt)),
          el('td', { class: 'num' }, h.ingestRate >= 1e4 ? formatQps(h.ingestRate) : String(Math.round(h.ingestRate))),
          el('td', { class: 'num' }, String(h.connections)),
          el('td', { class: 'num' }, String(h.hotCount)),
          el('td', { class: 'num' }, formatBytes(h.heapUsed)),
          el('td', { class: 'num' }, formatBytes(h.rss)),
          el('td', {}, el('span', { class: `badge redis-${h.redis}` }, h.redis)),
          el('td', { class: now - h.updatedAt > 5000 ? 'error' : 'muted' }, formatAgo(h.updatedAt, now)),
        ),
      ),
    );
    const lines = groupInstances(s.instances);
    this.#instanceCount.textContent = `(${lines.length}${lines.length > MAX_INSTANCES_SHOWN ? `, first ${MAX_INSTANCES_SHOWN} shown` : ''})`;
    this.#instances.replaceChildren(
      ...lines
        .slice(0, MAX_INSTANCES_SHOWN)
        .map((i) =>
          el(
            'tr',
            {},
            el('td', {}, i.app),
            el('td', { class: 'mono' }, i.instance),
            el('td', {}, i.host),
            el('td', { class: 'mono' }, i.sdk),
            el('td', { class: 'mono' }, i.hubs.join(', ')),
            el('td', { class: now - i.lastReport > 10_000 ? 'muted' : '' }, formatAgo(i.lastReport, now)),
          ),
        ),
    );
  }
}
