/**
 * What the live feed shows every page, gathered from the hub once per round: the cluster's hot
 * rows (this hub's own plus those other hubs share in their statuses, each with its rule's
 * window and kind), the hubs, the SDK instances and the apps; and the per-page diff that picks,
 * within one frame's budget, what a page lacks or holds stale. dashboard-feed.ts sends it.
 */
import {
  MAX_FEED_HUBS,
  type FeedEvent,
  type FeedHotRow,
  type FeedHub,
  type FeedInstance,
} from '@hotkey/sdk/feed-protocol';
import { RULE_DEFAULTS, RuleSet, type Rule } from '@hotkey/sdk/rules';
import type { HubEvent } from '../core/coordinator.ts';
import { clusterHotRows, clusterInstanceRows, rowId, type ClusterSource } from './cluster-view.ts';

/** key + byte budget of one frame: MAX_FRAME_BYTES is 1 MiB and keys can be 1 KiB each */
const FRAME_BYTE_BUDGET = 512 * 1024;
const ROW_OVERHEAD_BYTES = 96;
/** A row as a page holds it: its values last sent and the round they were sent in. */
export interface SentRow {
  row: FeedHotRow;
  round: number;
}

/** true when the page should be sent the new values: QPS moved by > 2 % (or 1/s), or a field changed */
function changed(a: FeedHotRow, b: FeedHotRow): boolean {
  const dq = Math.abs(a.qps - b.qps);
  return (
    (dq > 1 && dq > 0.02 * Math.max(a.qps, b.qps)) ||
    a.threshold !== b.threshold ||
    a.windowMs !== b.windowMs ||
    a.since !== b.since ||
    a.hub !== b.hub ||
    a.instances !== b.instances ||
    a.kind !== b.kind ||
    Math.round(a.localPct ?? -1) !== Math.round(b.localPct ?? -1) ||
    Math.abs((a.loadsPerSec ?? -1) - (b.loadsPerSec ?? -1)) > Math.max(1, 0.02 * (b.loadsPerSec ?? 0))
  );
}

export function toFeedEvent(e: HubEvent): FeedEvent {
  const out: FeedEvent = { type: e.type, app: e.app, key: e.key, qps: e.qps, at: e.at, hub: e.hub };
  if (e.latencyMs !== undefined) out.latencyMs = e.latencyMs;
  if (e.reason !== undefined) out.reason = e.reason;
  if (e.manual !== undefined) out.manual = e.manual;
  return out;
}

/** The hub's state as every page sees it (see the header). */
export class FeedView {
  readonly #source: ClusterSource & { activeApps(): string[] };
  readonly #maxInstances: number;
  /** compiled rules per app, rebuilt when the app's rule list changes (for each row's window) */
  readonly #ruleSets = new Map<string, { rules: readonly Rule[]; set: RuleSet }>();

  constructor(source: ClusterSource & { activeApps(): string[] }, maxInstances: number) {
    this.#source = source;
    this.#maxInstances = maxInstances;
  }

  /** the rule that decides `key`, from a rule set compiled once per rules version */
  #ruleOf(app: string, key: string): Rule | undefined {
    const rules = this.#source.coordinator.rules(app);
    let cached = this.#ruleSets.get(app);
    if (cached === undefined || cached.rules !== rules) {
      if (this.#ruleSets.size > 10_000) this.#ruleSets.clear();
      cached = { rules, set: new RuleSet(rules) };
      this.#ruleSets.set(app, cached);
    }
    return cached.set.ruleFor(key);
  }

  /** every hot key of the cluster, hottest first: ours exactly, other hubs' from their statuses */
  hotRows(): FeedHotRow[] {
    const privacy = this.#source.keyPrivacy;
    return clusterHotRows(this.#source).map((r) => {
      const rule = this.#ruleOf(r.app, r.key);
      const row: FeedHotRow = {
        app: r.app,
        key: privacy.show(r.app, r.key),
        qps: r.qps,
        threshold: r.threshold,
        windowMs: rule?.windowMs ?? RULE_DEFAULTS.windowMs,
        since: r.since,
        hub: r.hub,
        instances: r.instances,
        ...(r.localPct === undefined ? {} : { localPct: r.localPct }),
        ...(r.loadsPerSec === undefined ? {} : { loadsPerSec: r.loadsPerSec }),
      };
      if (rule?.kind === 'write' || rule?.kind === 'any') row.kind = rule.kind;
      return row;
    });
  }

  hubs(rows: readonly FeedHotRow[]): FeedHub[] {
    const hotByHub = new Map<string, number>();
    for (const r of rows) hotByHub.set(r.hub, (hotByHub.get(r.hub) ?? 0) + 1);
    return this.#source.coordinator
      .statuses()
      .slice(0, MAX_FEED_HUBS)
      .map((s) => ({
        id: s.id,
        url: s.url,
        startedAt: s.startedAt,
        ingestRate: s.ingestRate,
        connections: s.connections,
        heapUsed: s.heapUsed,
        rss: s.rss,
        redis: s.redis,
        hotCount: hotByHub.get(s.id) ?? 0,
        instanceCount:
          s.id === this.#source.id
            ? this.#source.instanceRows(undefined, this.#maxInstances).length
            : s.instanceRows.length,
        updatedAt: s.updatedAt,
      }));
  }

  instances(): FeedInstance[] {
    return clusterInstanceRows(this.#source, undefined, this.#maxInstances).map((i) => ({
      app: i.app,
      instance: i.instance,
      host: i.host,
      sdk: i.sdk,
      hub: i.hub,
      lastReport: i.lastReport,
      connectedAt: i.connectedAt,
    }));
  }

  apps(): string[] {
    return [...new Set([...this.#source.coordinator.apps(), ...this.#source.activeApps()])].sort().slice(0, 10_000);
  }
}

/**
 * What the page lacks or holds stale, within the frame's row and byte budget. Order: removals,
 * then rows the page does not have (hottest first), then changed rows least recently sent first,
 * so that when more rows change per round than fit in a frame every row still gets refreshed
 * in turn (hottest-first alone would starve the bottom of the table).
 */
export function diffRows(
  sent: Map<string, SentRow>,
  rows: readonly FeedHotRow[],
  max: number,
  round: number,
): { hot: FeedHotRow[]; gone: { app: string; key: string }[] } {
  let budget = FRAME_BYTE_BUDGET;
  const current = new Set<string>();
  const fresh: [string, FeedHotRow][] = [];
  const stale: [string, FeedHotRow, number][] = [];
  for (const row of rows) {
    const id = rowId(row.app, row.key);
    current.add(id);
    const before = sent.get(id);
    if (before === undefined) fresh.push([id, row]);
    else if (changed(before.row, row)) stale.push([id, row, before.round]);
  }
  const gone: { app: string; key: string }[] = [];
  for (const [id, { row }] of sent) {
    if (current.has(id)) continue;
    if (gone.length >= max || budget <= 0) break;
    gone.push({ app: row.app, key: row.key });
    sent.delete(id);
    budget -= ROW_OVERHEAD_BYTES + 3 * (row.key.length + row.app.length);
  }
  stale.sort((a, b) => a[2] - b[2] || b[1].qps - a[1].qps);
  const hot: FeedHotRow[] = [];
  for (const [id, row] of [...fresh, ...stale]) {
    if (hot.length >= max || budget <= 0) break;
    hot.push(row);
    sent.set(id, { row, round });
    budget -= ROW_OVERHEAD_BYTES + 3 * (row.key.length + row.app.length + row.hub.length);
  }
  return { hot, gone };
}
