/**
 * The seam between one hub and the rest of the cluster. The hub core (server, aggregator, HTTP)
 * talks only to this interface, which is why it lives in core/ and the implementations in
 * cluster/: `LocalCoordinator` serves a hub running alone on embedded defaults,
 * `RedisCoordinator` a cluster of hubs sharing one Redis.
 *
 * Everything here must keep working when the shared store is down: reads answer from the last
 * known state, writes that only inform (events, stats) are dropped and counted, and `health()`
 * says `degraded` until the store is back.
 */
import type { Member } from '@hotkey/sdk/protocol';
import type { FeedEvent, FeedHub } from '@hotkey/sdk/feed-protocol';
import type { Rule } from '@hotkey/sdk/rules';

/** A promotion, demotion or invalidation, as shown in the events feed and kept in history: the
 * feed's wire type, so what the hub records is exactly what the dashboard receives. */
export type HubEvent = FeedEvent;

/**
 * Periodic status a hub shares so that any hub can show the whole cluster. The feed's `hotCount` and
 * `instanceCount` (FeedHub) are counted from these lists.
 */
export interface HubStatus extends Omit<FeedHub, 'hotCount' | 'instanceCount'> {
  /** hot keys this hub owns, top by QPS, bounded */
  hotKeys: {
    app: string;
    key: string;
    qps: number;
    since: number;
    instances: number;
    threshold: number;
    /** what local caching saves on the key (core/observe/savings.ts), when the SDKs reported it */
    localPct?: number;
    loadsPerSec?: number;
  }[];
  /** SDK connections to this hub, bounded */
  instanceRows: { app: string; instance: string; host: string; sdk: string; lastReport: number; connectedAt: number }[];
}

/** An app as the config file describes it. */
export interface AppSeed {
  /** token SDKs of the app must present; undefined: the app is open */
  token?: string;
  /** validated rules; [] = the default rule */
  rules?: readonly Rule[];
}

export interface AppAuth {
  /** token SDKs of the app must present; undefined: the app is open */
  token?: string;
}

export interface Health {
  /** 'ok': all parts reachable; 'degraded': serving on last known state (shared store down) */
  state: 'ok' | 'degraded';
  detail: string;
}

export interface Coordinator {
  /** this hub's id (stable for the process) */
  readonly selfId: string;
  /** true: no other hub can ever join (LocalCoordinator); absent or false: part of a cluster @default false */
  readonly standalone?: boolean;
  /** Joins the cluster. Resolves even when the shared store is unreachable (it keeps retrying). */
  start(self: Member): Promise<void>;
  /** Graceful leave: removes this hub from the member list before resolving. */
  leave(): Promise<void>;
  close(): Promise<void>;

  /** live members, this hub included, and the epoch that numbers this version of the list */
  members(): { epoch: number; members: Member[] };
  onMembers(listener: (epoch: number, members: Member[]) => void): void;

  /**
   * Auth and existence of an app. undefined: unknown app (refuse with HK_ERR_UNKNOWN_APP), unless
   * the hub runs open (embedded defaults without a config file), where every app exists.
   */
  app(app: string): AppAuth | undefined;
  /** apps known to the cluster (for the dashboard and the API) */
  apps(): string[];
  /** the app's validated rules ([] = the default rule) */
  rules(app: string): Rule[];
  /**
   * A reloaded config file's apps (validated): tokens apply to the next Hello, and the rules of an
   * app whose rules in the file changed replace its current ones where the file is their source.
   * Absent: apps are fixed at start.
   */
  reconfigure?(apps: Readonly<Record<string, AppSeed>>): void;
  /** Validates (throws ValidationError naming the field) and stores; every hub hears of it within 1 s. */
  setRules(app: string, rules: unknown): Promise<Rule[]>;
  onRules(listener: (app: string, rules: Rule[]) => void): void;

  /** Appends to history and to the cluster-wide live feed. Never throws. */
  publishEvent(event: HubEvent): void;
  /** events from every hub, this one included */
  onEvent(listener: (event: HubEvent) => void): void;
  /** events of the app (all apps when undefined) since `since` (ms), oldest first, at most `limit` */
  history(app: string | undefined, since: number, limit: number): Promise<HubEvent[]>;

  /** Shares this hub's status; never throws. */
  publishStatus(status: HubStatus): void;
  /** latest status of every live hub (this one included) */
  statuses(): HubStatus[];

  /**
   * Window handoff (handoff.ts): delivers a chunk to member `to`; never throws. Absent (a hub
   * alone): nothing is handed over.
   */
  sendHandoff?(to: string, bytes: Uint8Array): void;
  /** chunks other hubs handed to this one */
  onHandoff?(listener: (bytes: Uint8Array) => void): void;

  health(): Health;
  /** the shared store's loss counters for /metrics; undefined (or absent): nothing is shared */
  stats?(): CoordinatorCounters;
}

/** What a coordinator over a shared store lost or refused, exported at /metrics as `hotkey_cluster_*`. */
export interface CoordinatorCounters {
  /** events that could not be published to the other hubs */
  droppedEvents: number;
  /** history entries dropped (buffer full) or lost (write failed) */
  droppedHistory: number;
  /** history entries waiting for the store */
  bufferedHistory: number;
  /** rule sets from the store that failed validation */
  rejectedRules: number;
  /** pub/sub messages from the store that were not a valid event or status */
  badMessages: number;
  /** window handoff chunks that could not be written to the store (their windows are lost) */
  droppedHandoffs?: number;
}
