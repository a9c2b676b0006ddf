/**
 * The page's model of the live feed: applies FeedSnapshot / FeedDelta frames to plain maps and
 * arrays and records what changed, so that rendering (a few times a second) touches only the views
 * that need it. Pure: no DOM, tested in Node.
 */
import { MsgType } from '@hotkey/sdk/protocol';
import type { FeedEvent, FeedHotRow, FeedHub, FeedInstance, FeedMessage } from '@hotkey/sdk/feed-protocol';
import { rowId } from './row-id.ts';

/**
 * @param [maxEvents=2000] events kept in the page (oldest dropped first)
 * @param [maxRows=50000] hot rows kept (a misbehaving hub cannot grow the page without bound)
 */
export interface FeedStateOptions {
  maxEvents?: number;
  maxRows?: number;
}

export interface FeedError {
  code: string;
  message: string;
}

export class FeedState {
  readonly rows = new Map<string, FeedHotRow>();
  /** oldest first */
  events: FeedEvent[] = [];
  hubs: FeedHub[] = [];
  instances: FeedInstance[] = [];
  apps: string[] = [];
  /** id of the hub serving the feed */
  hub = '';
  /** hub wall-clock time of the latest frame */
  at = 0;
  /** hot keys in the cluster according to the hub (may exceed rows.size until deltas catch up) */
  hotTotal = 0;
  lastError: FeedError | undefined;
  /** bumped on every change, per area: views redraw when theirs moved */
  readonly versions = { rows: 0, events: 0, hubs: 0, instances: 0, apps: 0 };
  readonly #maxEvents: number;
  readonly #maxRows: number;

  constructor(opts: FeedStateOptions = {}) {
    this.#maxEvents = opts.maxEvents ?? 2000;
    this.#maxRows = opts.maxRows ?? 50_000;
  }

  apply(msg: FeedMessage): void {
    switch (msg.t) {
      case MsgType.FeedSnapshot:
        this.rows.clear();
        this.events = [];
        this.hub = msg.hub;
        this.#upsert(msg.hot);
        this.#addEvents(msg.events);
        this.#setHubs(msg.hubs);
        this.#setInstances(msg.instances);
        this.#setApps(msg.apps);
        this.hotTotal = msg.hotTotal;
        this.at = msg.at;
        this.versions.rows++;
        this.lastError = undefined;
        return;
      case MsgType.FeedDelta:
        if (msg.hot.length > 0 || msg.gone.length > 0 || msg.hotTotal !== this.hotTotal) this.versions.rows++;
        for (const g of msg.gone) this.rows.delete(rowId(g.app, g.key));
        this.#upsert(msg.hot);
        this.#addEvents(msg.events);
        if (msg.hubs) this.#setHubs(msg.hubs);
        if (msg.instances) this.#setInstances(msg.instances);
        if (msg.apps) this.#setApps(msg.apps);
        this.hotTotal = msg.hotTotal;
        this.at = msg.at;
        return;
      case MsgType.Error:
        this.lastError = { code: msg.code, message: msg.message };
        return;
    }
  }

  #upsert(rows: FeedHotRow[]): void {
    for (const row of rows) {
      const id = rowId(row.app, row.key);
      if (!this.rows.has(id) && this.rows.size >= this.#maxRows) continue;
      this.rows.set(id, row);
    }
  }

  #addEvents(events: FeedEvent[]): void {
    if (events.length === 0) return;
    this.events.push(...events);
    if (this.events.length > this.#maxEvents) this.events.splice(0, this.events.length - this.#maxEvents);
    this.versions.events++;
  }

  #setHubs(hubs: FeedHub[]): void {
    this.hubs = hubs;
    this.versions.hubs++;
  }

  #setInstances(instances: FeedInstance[]): void {
    this.instances = instances;
    this.versions.instances++;
  }

  #setApps(apps: string[]): void {
    this.apps = [...apps].sort();
    this.versions.apps++;
  }
}
