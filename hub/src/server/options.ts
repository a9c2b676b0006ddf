/**
 * Options of `startHub`, each with its default (the tunables' defaults are in core/tunables.ts),
 * kept apart from the server so that the CLI and tests read them without starting one.
 */
import type { Coordinator } from '../core/coordinator.ts';
import type { HubTunables } from '../core/tunables.ts';
import type { Logger } from '../core/logger.ts';

/** The config file's shape before validation (rules get their defaults filled in). */
export interface HubConfigInput {
  apps: Record<string, { token?: string; rules?: readonly object[] }>;
  adminToken?: string;
  dashboardToken?: string;
  /** webhook targets `{ url, events, apps?, secret?, ca?, timeoutMs?, retries?, maxQueue? }` (notify/notify-config.ts) */
  notify?: readonly object[];
}

/** where a hub listens unless told otherwise (`--port`, `--host`, `HubOptions`) */
export const DEFAULT_PORT = 7070;
export const DEFAULT_HOST = '127.0.0.1';

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
  /**
   * browser origins (`https://ops.example.com`, or `*` for any) allowed to open `/ws` and `/live`.
   * A request without an Origin header (SDKs in Node) is always allowed; the hub's own origin
   * (same host:port) is allowed on `/live`. @default []
   */
  allowedOrigins?: readonly string[];
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
}
