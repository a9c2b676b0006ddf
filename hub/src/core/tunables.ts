/**
 * The hub's performance and safety knobs, each with its default: the one home of those defaults,
 * beside the core that reads them (the server, the live feed and tests import them from here).
 */
import { DEFAULT_LEASE_MS } from '@hotkey/sdk/protocol';

export interface HubTunables {
  /** keys with a sliding window per app; more evict the smallest non-hot key @default 100000 */
  maxKeysPerApp: number;
  /** apps the hub keeps state for (bounds open mode, where any app name is accepted); a Hello past it gets 4011, retried @default 1000 */
  maxApps: number;
  /** keys with a sliding window across all apps: each app's cap is min(maxKeysPerApp, maxKeysTotal / apps) @default 500000 */
  maxKeysTotal: number;
  /** ms an app with no SDK connected keeps its state here (then its keys go and its place frees up) @default 60000 */
  appIdleMs: number;
  /** SDK connections per app on this hub (each holds a socket: see maxConnections and the open-file limit) @default 20000 */
  maxSessionsPerApp: number;
  /** send-buffer bytes per socket above which it is closed with 4008 @default 8388608 (8 MiB) */
  maxBufferedBytes: number;
  /** ms a new connection has to send Hello before Error + close 4006 @default 5000 */
  helloTimeoutMs: number;
  /**
   * ms of each lease granted to an SDK (protocol.ts DEFAULT_LEASE_MS): an SDK serves this hub's
   * cached values only while its lease is current, so an invalidation that an SDK does not
   * confirm is acked (naming it as fenced) once its lease lapsed. Sets the bound on write latency
   * under a partition (leaseMs × 1.125 + a tick); keep it below the SDKs' invalidateTimeoutMs @default 2000
   */
  leaseMs: number;
  /** ms between demotion / expiry checks @default 100 */
  tickMs: number;
  /** ms between HubStatus publications @default 1000 */
  statusIntervalMs: number;
  /** minimum ms between Config frames to one app (debounce of instance-count changes) @default 250 */
  configDebounceMs: number;
  /** share of a rule's threshold the cluster may leave unreported by per-instance pre-filtering @default 0.2 */
  localThresholdFraction: number;
  /**
   * threads besides the event loop that write a big broadcast (server/fanout-threads.ts), at most:
   * never more than the CPU count minus one; 0 = the event loop writes every socket itself @default 3
   */
  fanoutThreads: number;
  /** broadcasts to fewer sockets than this are written by the event loop alone (a hand-over has a fixed cost) @default 1000 */
  fanoutThreadsMinSockets: number;
  /** ms between WebSocket pings; a socket that answered none of the last is dropped (dead peer) @default 15000 */
  pingIntervalMs: number;
  /** largest HTTP request body accepted @default 65536 */
  maxBodyBytes: number;
  /** events kept for GET /api/events @default 1000 */
  recentEvents: number;
  /** InvalidateRequests per second one connection may put through; more wait in its queue @default 5000 */
  invalidateRate: number;
  /** InvalidateRequests one connection may send at once before its rate applies @default 5000 */
  invalidateBurst: number;
  /** InvalidateRequests waiting for one connection's budget at most; one more closes it with 4012 @default 10000 */
  maxQueuedInvalidations: number;
  /** ms of frame processing per event loop turn before the fair intake yields @default 4 */
  intakeTurnMs: number;
  /** ms of frame processing one connection gets per round of the fair intake @default 0.5 */
  intakeQuantumMs: number;
  /** bytes of frames queued per connection above which its socket is paused until its queue is empty @default 1048576 (1 MiB) */
  maxQueuedBytesPerConnection: number;
  /** bytes of frames queued by all connections above which any holding over 64 KiB is paused @default 4194304 (4 MiB) */
  maxQueuedBytes: number;
  /** hot keys per app at most; a stronger candidate (more reporters, then more QPS) displaces the weakest @default 10000 */
  maxHotKeysPerApp: number;
  /** promotions per second one connection may carry alone (keys no other instance reports) @default 32 */
  soloPromotionRate: number;
  /** promotions one connection may carry alone at once before its rate applies @default 256 */
  soloPromotionBurst: number;
  /** open mode only: distinct `app` label values in /metrics histograms; later apps are `app="other"` (configured apps are all labelled) @default 100 */
  maxAppLabels: number;
  // ---- admission: what a connection may cost before it has shown a token (server/admission.ts) ----
  /** bytes a WebSocket may send before its Hello is accepted; more: close 4004 (HK_ERR_FRAME_TOO_LARGE) @default 16384 */
  preHelloBytes: number;
  /** WebSockets open without an accepted Hello, hub-wide; past it the oldest is closed with 4009 @default 256 */
  maxUnauthenticatedSockets: number;
  /** the same per remote address, so one address cannot push out every other's handshakes @default 64 */
  maxUnauthenticatedPerAddress: number;
  /** TCP connections that have not completed their first HTTP request; past it the oldest is closed @default 1024 */
  maxPendingConnections: number;
  /** TCP connections in all (node:http `server.maxConnections`); 0 = the process's open-file limit minus 128 when it can be read @default 0 */
  maxConnections: number;
  /** connections the kernel queues before the hub accepts them (capped by net.core.somaxconn): a burst past it is dropped and its clients wait on SYN retries (1 s, 3 s …) @default 4096 */
  listenBacklog: number;
  /** ms to receive a request's headers (node:http `headersTimeout`) @default 10000 */
  headersTimeoutMs: number;
  /** ms to receive a whole request (node:http `requestTimeout`) @default 30000 */
  requestTimeoutMs: number;
  /** ms an idle keep-alive connection is kept (node:http `keepAliveTimeout`) @default 5000 */
  keepAliveTimeoutMs: number;
  /** a connection's Resyncs are answered at most once per this many ms (later ones are coalesced into one) @default 1000 */
  minResyncIntervalMs: number;
  /** value push (`push: true` rules): ms an SDK asked to load a shared key has to push it before another is asked (once per round); keep it under the SDKs' pushWaitMs @default 500 */
  pushFillTimeoutMs: number;
  /** value push: bytes of a pushed value (Push, or an update's value) at most; larger ones are discarded / sent as a plain invalidation (HK_ERR_PUSH_TOO_LARGE) @default 65536 */
  maxPushBytes: number;
  /** window handoff on a membership change (core/membership/handoff.ts): keys handed to new owners at most per change, and taken from one sender per epoch; 0 = no handoff @default 10000 */
  handoffMaxKeys: number;
  /** protocol 3 holders (core/invalidate/holders.ts): keys one session may register; past it a Hold is refused (r = 2, counted) @default 1024 */
  maxHeldPerSession: number;
  /** keys the sessions of one remote address may register together per app; past it r = 2 @default 16384 */
  maxHeldPerAddress: number;
  /** registrations per app; past it r = 4 @default 262144 */
  maxHeldPerApp: number;
  /** keys whose last write an app's write clock remembers exactly; past it the floor rises (more r = 1, never unsafe) @default 65536 */
  maxWriteMarks: number;
}

export const DEFAULT_TUNABLES: HubTunables = {
  maxKeysPerApp: 100_000,
  maxApps: 1000,
  maxKeysTotal: 500_000,
  appIdleMs: 60_000,
  maxSessionsPerApp: 20_000,
  maxBufferedBytes: 8 * 1024 * 1024,
  helloTimeoutMs: 5000,
  leaseMs: DEFAULT_LEASE_MS,
  tickMs: 100,
  statusIntervalMs: 1000,
  configDebounceMs: 250,
  localThresholdFraction: 0.2,
  fanoutThreads: 3,
  fanoutThreadsMinSockets: 1000,
  pingIntervalMs: 15_000,
  maxBodyBytes: 64 * 1024,
  recentEvents: 1000,
  invalidateRate: 5000,
  invalidateBurst: 5000,
  maxQueuedInvalidations: 10_000,
  intakeTurnMs: 4,
  intakeQuantumMs: 0.5,
  maxQueuedBytesPerConnection: 1024 * 1024,
  maxQueuedBytes: 4 * 1024 * 1024,
  maxHotKeysPerApp: 10_000,
  soloPromotionRate: 32,
  soloPromotionBurst: 256,
  maxAppLabels: 100,
  preHelloBytes: 16 * 1024,
  maxUnauthenticatedSockets: 256,
  maxUnauthenticatedPerAddress: 64,
  maxPendingConnections: 1024,
  maxConnections: 0,
  listenBacklog: 4096,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5000,
  minResyncIntervalMs: 1000,
  pushFillTimeoutMs: 500,
  maxPushBytes: 65_536,
  handoffMaxKeys: 10_000,
  maxHeldPerSession: 1024,
  maxHeldPerAddress: 16_384,
  maxHeldPerApp: 262_144,
  maxWriteMarks: 65_536,
};
