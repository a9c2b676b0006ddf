/**
 * Options of `startHub` and the tunables, each with its default: the one home of the hub's
 * defaults, kept apart from the server so that the CLI, the live feed and tests read them without
 * starting one.
 */
import type { Coordinator } from '../cluster/coordinator.ts';
import type { Logger } from './logger.ts';

/** The config file's shape before validation (rules get their defaults filled in). */
export interface HubConfigInput {
  apps: Record<string, { token?: string; rules?: readonly object[] }>;
  adminToken?: string;
  dashboardToken?: string;
}

export interface HubTunables {
  /** keys with a sliding window per app; more evict the smallest non-hot key @default 100000 */
  maxKeysPerApp: number;
  /** apps the hub keeps state for (bounds open mode, where any app name is accepted) @default 1000 */
  maxApps: number;
  /** SDK connections per app @default 10000 */
  maxSessionsPerApp: number;
  /** send-buffer bytes per socket above which it is closed with 4008 @default 8388608 (8 MiB) */
  maxBufferedBytes: number;
  /** ms a new connection has to send Hello before Error + close 4006 @default 5000 */
  helloTimeoutMs: number;
  /** ms after which an invalidation is acked even if some SDK has not applied it @default 1000 */
  invalidateAckTimeoutMs: number;
  /** ms between demotion / expiry checks @default 100 */
  tickMs: number;
  /** ms between HubStatus publications @default 1000 */
  statusIntervalMs: number;
  /** minimum ms between Config frames to one app (debounce of instance-count changes) @default 250 */
  configDebounceMs: number;
  /** share of a rule's threshold the cluster may leave unreported by per-instance pre-filtering @default 0.2 */
  localThresholdFraction: number;
  /** ms between WebSocket pings; a socket that answered none of the last is dropped (dead peer) @default 15000 */
  pingIntervalMs: number;
  /** largest HTTP request body accepted @default 65536 */
  maxBodyBytes: number;
  /** events kept for GET /api/events @default 1000 */
  recentEvents: number;
  /** open mode only: distinct `app` label values in /metrics histograms; later apps are `app="other"` (configured apps are all labelled) @default 100 */
  maxAppLabels: number;
}

/** where a hub listens unless told otherwise (`--port`, `--host`, `HubOptions`) */
export const DEFAULT_PORT = 7070;
export const DEFAULT_HOST = '127.0.0.1';

export const DEFAULT_TUNABLES: HubTunables = {
  maxKeysPerApp: 100_000,
  maxApps: 1000,
  maxSessionsPerApp: 10_000,
  maxBufferedBytes: 8 * 1024 * 1024,
  helloTimeoutMs: 5000,
  invalidateAckTimeoutMs: 1000,
  tickMs: 100,
  statusIntervalMs: 1000,
  configDebounceMs: 250,
  localThresholdFraction: 0.2,
  pingIntervalMs: 15_000,
  maxBodyBytes: 64 * 1024,
  recentEvents: 1000,
  maxAppLabels: 100,
};

/** A certificate and its private key, PEM (what node:https takes). */
export interface HubTlsOptions {
  /** the server certificate chain, PEM */
  cert: string | Buffer;
  /** its private key, PEM */
  key: string | Buffer;
}

export interface HubOptions {
  /** TCP port; 0 picks a free one @default DEFAULT_PORT (7070) */
  port?: number;
  /** interface to listen on @default DEFAULT_HOST ('127.0.0.1') */
  host?: string;
  /** parsed config JSON, validated like the file (wins over `configPath`); neither: open mode (any app, no token, default rule) */
  config?: HubConfigInput;
  /** JSON config file to load and validate */
  configPath?: string;
  /** the cluster seam @default a LocalCoordinator over `config` */
  coordinator?: Coordinator;
  /** bearer token for API writes; without one writes are refused @default config.adminToken */
  adminToken?: string;
  /** bearer token for API reads and the page; without one reads are open @default config.dashboardToken */
  dashboardToken?: string;
  /** this hub's id @default `hub-<random>` (or the coordinator's selfId when one is given) */
  nodeId?: string;
  /** ws:// URL SDKs use to reach this hub @default `ws://<host>:<port>/ws` */
  advertiseUrl?: string;
  /** performance and safety knobs */
  tunables?: Partial<HubTunables>;
  /** wall clock in ms @default Date.now */
  now?: () => number;
  /** serve HTTPS and WSS on the port instead of HTTP and WS @default undefined (plain) */
  tls?: HubTlsOptions;
  /**
   * where the hub logs (never tokens): one event per promotion, demotion, rule change, member
   * change, refused connection and admin write, as fields (`{ evt: 'promote', app, key, qps }`).
   * Any pino-compatible logger. @default warnings and errors as JSON lines on stderr
   */
  logger?: Logger;
  /** a plain sink instead of `logger` (warnings and errors, one line each) */
  log?: (message: string) => void;
}
