/**
 * Sorting, filtering and windowing of the hot-key table. With 10 000 hot keys the page keeps every
 * row in the model but renders only the rows in view (a virtual window), so one redraw costs a sort
 * of the filtered rows plus a few dozen DOM rows. Pure: no DOM, tested in Node.
 */
import type { FeedHotRow } from '@hotkey/sdk/feed-protocol';

export const SORT_COLUMNS = [
  'app',
  'key',
  'qps',
  'threshold',
  'since',
  'hub',
  'instances',
  'localPct',
  'loadsPerSec',
] as const;
export type SortColumn = (typeof SORT_COLUMNS)[number];

export interface TableQuery {
  /** case-insensitive substring of the key (or of the app when written `app:` + text) */
  filter: string;
  /** only this app; '' for all */
  app: string;
  sort: SortColumn;
  descending: boolean;
}

export const DEFAULT_QUERY: TableQuery = { filter: '', app: '', sort: 'qps', descending: true };

function compare(a: FeedHotRow, b: FeedHotRow, column: SortColumn): number {
  // a row the SDKs have not reported savings for yet sorts below every reported one
  const x = a[column] ?? -1;
  const y = b[column] ?? -1;
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  return String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0;
}

/** Rows matching the query, sorted; ties broken by app then key so the order is stable between frames. */
export function queryRows(rows: Iterable<FeedHotRow>, query: TableQuery): FeedHotRow[] {
  const needle = query.filter.trim().toLowerCase();
  const out: FeedHotRow[] = [];
  for (const row of rows) {
    if (query.app !== '' && row.app !== query.app) continue;
    if (needle !== '' && !row.key.toLowerCase().includes(needle) && !row.app.toLowerCase().includes(needle)) continue;
    out.push(row);
  }
  const sign = query.descending ? -1 : 1;
  out.sort((a, b) => sign * compare(a, b, query.sort) || compare(a, b, 'app') || compare(a, b, 'key'));
  return out;
}

/**
 * Reads of hot keys the SDKs answered from their local caches per second, over `rows`: each row's
 * QPS times its served-locally share (rows without a share yet count nothing).
 */
export function readsSpared(rows: Iterable<FeedHotRow>): number {
  let spared = 0;
  for (const row of rows) if (row.localPct !== undefined) spared += (row.qps * row.localPct) / 100;
  return spared;
}

/** The `limit` rows with the highest QPS, highest first, without sorting everything (rows >> limit). */
export function topByQps(rows: Iterable<FeedHotRow>, limit: number): FeedHotRow[] {
  if (limit <= 0) return [];
  // A sorted array of at most `limit` rows, lowest QPS last: inserting is O(limit) but most rows
  // lose against the current minimum and are rejected in O(1).
  const top: FeedHotRow[] = [];
  for (const row of rows) {
    if (top.length === limit && row.qps <= top[top.length - 1]!.qps) continue;
    let i = top.length;
    while (i > 0 && top[i - 1]!.qps < row.qps) i--;
    top.splice(i, 0, row);
    if (top.length > limit) top.pop();
  }
  return top;
}

export interface RowWindow {
  /** index of the first row to render */
  start: number;
  /** one past the last row to render */
  end: number;
  /** px above the first rendered row */
  offset: number;
  /** px of the whole list */
  total: number;
}

/**
 * The rows to render for a scroll position.
 * @param [overscan=8] rows rendered beyond each edge, so fast scrolling shows no blank band
 */
export function visibleWindow(
  count: number,
  scrollTop: number,
  viewportPx: number,
  rowPx: number,
  overscan = 8,
): RowWindow {
  const total = count * rowPx;
  const first = Math.floor(Math.max(0, Math.min(scrollTop, Math.max(0, total - viewportPx))) / rowPx);
  const start = Math.max(0, first - overscan);
  const end = Math.min(count, first + Math.ceil(viewportPx / rowPx) + overscan);
  return { start, end, offset: start * rowPx, total };
}
