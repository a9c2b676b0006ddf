/** One event as a table row, shared by the Events tab and the key detail. */
import type { FeedEvent } from '@hotkey/sdk/feed-protocol';
import { el } from './element.ts';
import { formatClock, formatQps } from './format.ts';

export function eventRow(e: FeedEvent, withKey = true): HTMLTableRowElement {
  const detail =
    e.type === 'promote'
      ? e.latencyMs !== undefined
        ? `detected in ${Math.round(e.latencyMs)} ms`
        : ''
      : e.type === 'demote'
        ? (e.reason ?? '')
        : '';
  return el(
    'tr',
    { class: `ev ev-${e.type}`, 'data-testid': 'event-row' },
    el('td', { class: 'mono' }, formatClock(e.at)),
    el(
      'td',
      {},
      el('span', { class: `badge b-${e.type}` }, e.type),
      e.manual ? el('span', { class: 'badge b-manual' }, 'manual') : null,
    ),
    withKey ? el('td', {}, e.app) : null,
    withKey
      ? el(
          'td',
          { class: 'key' },
          el('a', { href: `#/key/${encodeURIComponent(e.app)}/${encodeURIComponent(e.key)}` }, e.key),
        )
      : null,
    el('td', { class: 'num' }, e.type === 'invalidate' ? '' : formatQps(e.qps)),
    el('td', { class: e.type === 'promote' ? 'latency' : 'muted' }, detail),
    el('td', { class: 'muted' }, e.hub),
  );
}

export function eventHeader(withKey = true): HTMLTableSectionElement {
  return el(
    'thead',
    {},
    el(
      'tr',
      {},
      ...['Time', 'Event', ...(withKey ? ['App', 'Key'] : []), 'QPS', 'Latency / reason', 'Hub'].map((h) =>
        el('th', { class: h === 'QPS' ? 'num' : '' }, h),
      ),
    ),
  );
}
