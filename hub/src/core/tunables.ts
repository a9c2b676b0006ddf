/**
 * The hub's performance and safety knobs, each with its default: the one home of those defaults,
 * beside the core that reads them (the server, the live feed and tests import them from here).
 */

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
