/**
 * The client's options and their defaults: one home for every default, used by HotKeyClient
 * (client/client.ts) and by each HubConnection it opens (wire/connection.ts). ioredis's
 * DEFAULT_REDIS_OPTIONS is the model.
 */

import { MAX_NAME_LENGTH, MAX_VALUE_BYTES } from './limits.ts';

/**
 * TLS for `wss://` hubs, handed to ws (and so to node:tls): trust a private CA, present a client
 * certificate. Without it the system's CAs verify the hub.
 */
export interface ClientTlsOptions {
  /** CA certificate(s) the hub's certificate must chain to, PEM @default the system CAs */
  ca?: string | Buffer | Array<string | Buffer>;
  /** client certificate chain, PEM, for hubs that ask for one @default none */
  cert?: string | Buffer | Array<string | Buffer>;
  /** private key of `cert`, PEM @default none */
  key?: string | Buffer | Array<string | Buffer>;
  /** false accepts any certificate: for tests only @default true */
  rejectUnauthorized?: boolean;
  /** name checked against the hub's certificate @default the URL's host */
  servername?: string;
}

/**
 * Where the client logs connects, disconnects, refusals and faults: pino's calling convention
 * (`logger.warn({ evt: 'disconnect', hub, code }, 'hub disconnected')`), so a pino logger (or a
 * child of one) fits as is.
 */
export interface ClientLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/**
 * Local surges (client/read/surge-local.ts): a key this instance alone sees surging is served from its
 * local cache before the hub's cluster-wide promotion arrives, under the lease of the key's owner
 * hub (which hears and acknowledges every write of it), bounded, and dropped unless the hub
 * promotes it in time.
 */
export interface SurgeLocalOptions {
  /**
   * the surge fraction: a key counted `fraction × threshold` times within one 100 ms slice of this
   * instance's window surges here (`threshold` of the key's rule, scaled to a 1 s window) @default 0.005
   */
  fraction?: number;
  /**
   * deprecated: the former name of `fraction`, accepted until the next minor version; giving both
   * with different values is a TypeError @default 0.005
   * @deprecated use `fraction`
   */
  share?: number;
  /** fewest accesses within one slice that make a local surge, whatever `fraction` says @default 2 */
  minAccesses?: number;
  /**
   * a key read this many times within one synchronous job (the reads of a `Promise.all`, a
   * dataloader batch, a request fanning out; its first read included) surges here at once,
   * whatever its slice count (at least `minAccesses`); 0: off. Off by default: with it on, an
   * instance that surged a key within one job may drop out of the hub's count of instances
   * reporting that key @default 0
   */
  jobAccesses?: number;
  /** keys served locally before their hub confirms them, at most @default 64 */
  maxKeys?: number;
  /** bytes (estimated) of those keys' cached values together, at most @default 1048576 */
  maxBytes?: number;
  /** a local surge not promoted by its hub within this many windows of its rule is dropped @default 2 */
  confirmWindows?: number;
  /** a key its hub did not confirm is not promoted locally again for this long (ms) @default 10000 */
  retryMs?: number;
}

export interface ClientOptions {
  /** the application name the hub knows this service by (required) */
  app: string;
  /** seed hub URLs (`ws://host:port`); the first hub reached tells the rest (required) */
  hubs: string | readonly string[];
  /** the app's token, if the hub requires one @default undefined */
  token?: string;
  /** this instance's id @default `${hostname}-${pid}-${random}` */
  instanceId?: string;
  /** host name shown on the dashboard @default os.hostname() */
  host?: string;
  /** how often counts are reported to the hubs @default 100 */
  flushIntervalMs?: number;
  /** hot values kept in the local cache @default 10000 */
  maxEntries?: number;
  /**
   * a hot key of a hub we are cut off from stays hot (counted, its reads merged) at most this
   * long; its cached value is served only while that hub's lease lasts (≤ its leaseMs) @default 3000
   */
  maxStaleMs?: number;
  /** keys counted exactly (the rest only in a fixed-size sketch) @default 8192 */
  maxCandidates?: number;
  /** hot keys remembered at most @default 65536 */
  maxHotKeys?: number;
  /** rate-limited keys (a rule's `limit`) with a token bucket here at most; the oldest goes first @default 10000 */
  maxLimitedKeys?: number;
  /** first reconnect delay cap (full jitter) @default 100 */
  reconnectMinMs?: number;
  /** largest reconnect delay cap (full jitter) @default 5000 */
  reconnectMaxMs?: number;
  /** ping period while the instance reads, holds or awaits anything of a hub @default 1000 */
  pingIntervalMs?: number;
  /**
   * ping period while it does not (no lease wanted, nothing pending): an idle instance costs its
   * hubs a ping now and then; a hub that died meanwhile is noticed at the next request (within
   * `livenessTimeoutMs`) or after this + `livenessTimeoutMs` @default 15000
   */
  quietPingIntervalMs?: number;
  /** a hub silent this long is dead @default 2000 */
  livenessTimeoutMs?: number;
  /**
   * `invalidate()` rejects with HK_ERR_TIMEOUT after this. Must exceed the hubs' lease (leaseMs,
   * 2000 by default), which bounds how long a hub waits for an instance it cannot reach, and a
   * rolling restart step: a key's owner leaves, comes back seconds later, and acks its writes one
   * ownership fence (2.75 s) after it regained the key — restart time + 2.75 s, past 5 s for a hub
   * that takes over 2 s to start @default 10000
   */
  invalidateTimeoutMs?: number;
  /** invalidations awaiting their ack at most; more reject with HK_ERR_UNAVAILABLE @default 10000 */
  maxPendingInvalidations?: number;
  /** a report is dropped (and counted) while the socket has more than this queued @default 1048576 */
  maxBufferedBytes?: number;
  /**
   * share of accesses counted, in (0, 1]: reported counts are scaled by 1 / sampleRate, so
   * detection stays unbiased while counting costs less (a rule's own `sampleRate` can lower it
   * for its keys) @default 1
   */
  sampleRate?: number;
  /**
   * loader calls for hot keys (first loads, reloads, refreshes) in flight at once on this instance;
   * more wait in a queue (see maxLoadsQueued). A cold key's get() calls its loader directly, as
   * it would without hotkey, and is not counted @default 64
   */
  maxLoadsInFlight?: number;
  /**
   * hot-key loads waiting for a slot at most; past it a load fails with HK_ERR_LOAD_LIMIT (its
   * callers get the last value if stale-if-error allows) and a refresh is skipped until later @default 1024
   */
  maxLoadsQueued?: number;
  /**
   * a hot-key reload that has not settled after this long counts as failed for stale-if-error:
   * callers waiting on it get the last value when the rule's staleIfErrorMs allows (the load goes
   * on and still fills the cache if it succeeds); without such a value they keep waiting @default 1000
   */
  loadTimeoutMs?: number;
  /** value push (`push: true` rules): values larger than this once serialised are not pushed; every instance loads them itself @default 65536 */
  maxPushBytes?: number;
  /**
   * value push: after a shared key's promotion, readers with no value wait this long for the value
   * another instance loads and the hub broadcasts, then load it themselves @default 1000
   */
  pushWaitMs?: number;
  /**
   * serve a key that surges on this instance locally before the hub promotes it (see
   * SurgeLocalOptions); `true` turns it on with DEFAULT_SURGE_LOCAL, `false` off @default true
   */
  surgeLocal?: boolean | SurgeLocalOptions;
  /** TLS options for `wss://` hubs (CA, client certificate) @default undefined: the system CAs */
  tls?: ClientTlsOptions;
  /** pino-compatible logger for connects, disconnects and refusals @default silent */
  logger?: ClientLogger;
  /**
   * the monotonic clock in ms: never goes back, not comparable across processes (not `Date.now`,
   * which may jump and would move leases and windows with it); tests inject one @default performance.now
   */
  now?: () => number;
}

/** The numeric options, each with a default. */
export type ClientTunables = Required<
  Omit<ClientOptions, 'app' | 'hubs' | 'token' | 'instanceId' | 'host' | 'now' | 'tls' | 'logger' | 'surgeLocal'>
>;

/**
 * Every default of the client and its connections. `welcomeTimeoutMs` and `windowSliceMs` are
 * not client options: a hub that opened the socket but sent no Welcome within `welcomeTimeoutMs`
 * is dropped; the access window counts in slices of `windowSliceMs`, WINDOW_SLICES of them (the
 * 1 s window the per-instance thresholds are scaled to).
 */
export const DEFAULT_CLIENT_OPTIONS: Readonly<ClientTunables & { welcomeTimeoutMs: number; windowSliceMs: number }> =
  Object.freeze({
    flushIntervalMs: 100,
    maxEntries: 10_000,
    maxStaleMs: 3000,
    maxCandidates: 8192,
    maxHotKeys: 65_536,
    maxLimitedKeys: 10_000,
    reconnectMinMs: 100,
    reconnectMaxMs: 5000,
    pingIntervalMs: 1000,
    quietPingIntervalMs: 15_000,
    livenessTimeoutMs: 2000,
    invalidateTimeoutMs: 10_000,
    maxPendingInvalidations: 10_000,
    maxBufferedBytes: 1 << 20,
    sampleRate: 1,
    maxLoadsInFlight: 64,
    maxLoadsQueued: 1024,
    loadTimeoutMs: 1000,
    maxPushBytes: 65_536,
    pushWaitMs: 1000,
    welcomeTimeoutMs: 5000,
    windowSliceMs: 100,
  });

/** `surgeLocal` after validation: every field filled in, under its current name. */
export type ResolvedSurgeLocal = Required<Omit<SurgeLocalOptions, 'share'>>;

/**
 * Every default of `surgeLocal` (SurgeLocalOptions); `share`, the deprecated name of `fraction`,
 * stays beside it until the next minor version.
 */
export const DEFAULT_SURGE_LOCAL: Readonly<ResolvedSurgeLocal & { share: number }> = Object.freeze({
  fraction: 0.005,
  share: 0.005,
  minAccesses: 2,
  jobAccesses: 0,
  maxKeys: 64,
  maxBytes: 1 << 20,
  confirmWindows: 2,
  retryMs: 10_000,
});

/** The options after validation, every default filled in. */
export type ResolvedClientOptions = ClientTunables & {
  app: string;
  token: string | undefined;
  instanceId: string;
  host: string;
  tls: ClientTlsOptions | undefined;
  logger: ClientLogger;
  /** false: local surges off */
  surgeLocal: Readonly<ResolvedSurgeLocal> | false;
};

const SILENT: ClientLogger = Object.freeze({ debug() {}, info() {}, warn() {}, error() {} });
const TLS_FIELDS = new Set(['ca', 'cert', 'key', 'rejectUnauthorized', 'servername']);

/**
 * Validates `options` (TypeError at once on misuse) and fills in the defaults. `hubs` and `now`
 * are checked by the caller, which keeps them apart.
 */
export function resolveClientOptions(
  options: ClientOptions,
  defaultHost: () => string,
  defaultInstanceId: (host: string) => string,
): ResolvedClientOptions {
  const { app, token } = options;
  if (typeof app !== 'string' || app.length === 0 || app.length > MAX_NAME_LENGTH)
    throw new TypeError(`options.app must be a non-empty string of at most ${MAX_NAME_LENGTH} characters`);
  if (token !== undefined && (typeof token !== 'string' || token.length > MAX_NAME_LENGTH))
    throw new TypeError(`options.token must be a string of at most ${MAX_NAME_LENGTH} characters`);
  const host = options.host ?? defaultHost();
  const instanceId = options.instanceId ?? defaultInstanceId(host);
  if (typeof instanceId !== 'string' || instanceId.length === 0 || instanceId.length > MAX_NAME_LENGTH)
    throw new TypeError(`options.instanceId must be a non-empty string of at most ${MAX_NAME_LENGTH} characters`);
  if (typeof host !== 'string' || host.length > MAX_NAME_LENGTH)
    throw new TypeError(`options.host must be a string of at most ${MAX_NAME_LENGTH} characters`);
  const { tls, logger } = options;
  if (tls !== undefined) {
    if (typeof tls !== 'object' || tls === null || Array.isArray(tls))
      throw new TypeError('options.tls must be an object: { ca, cert, key, rejectUnauthorized, servername }');
    for (const name of Object.keys(tls))
      if (!TLS_FIELDS.has(name))
        throw new TypeError(`options.tls.${name} is not a TLS option (ca, cert, key, rejectUnauthorized, servername)`);
    if (tls.rejectUnauthorized !== undefined && typeof tls.rejectUnauthorized !== 'boolean')
      throw new TypeError('options.tls.rejectUnauthorized must be a boolean');
    if ((tls.cert === undefined) !== (tls.key === undefined))
      throw new TypeError('options.tls.cert and options.tls.key go together');
  }
  if (
    logger !== undefined &&
    (typeof logger !== 'object' ||
      logger === null ||
      !['debug', 'info', 'warn', 'error'].every(
        (l) => typeof (logger as unknown as Record<string, unknown>)[l] === 'function',
      ))
  ) {
    throw new TypeError('options.logger must have debug, info, warn and error methods (pino-compatible)');
  }
  const d = DEFAULT_CLIENT_OPTIONS;
  const resolved: ResolvedClientOptions = {
    app,
    token,
    instanceId,
    host,
    tls,
    logger: logger ?? SILENT,
    flushIntervalMs: posInt(options.flushIntervalMs, d.flushIntervalMs, 'flushIntervalMs'),
    maxEntries: posInt(options.maxEntries, d.maxEntries, 'maxEntries'),
    maxStaleMs: nonNegInt(options.maxStaleMs, d.maxStaleMs, 'maxStaleMs'),
    maxCandidates: posInt(options.maxCandidates, d.maxCandidates, 'maxCandidates'),
    maxHotKeys: posInt(options.maxHotKeys, d.maxHotKeys, 'maxHotKeys'),
    maxLimitedKeys: posInt(options.maxLimitedKeys, d.maxLimitedKeys, 'maxLimitedKeys'),
    reconnectMinMs: posInt(options.reconnectMinMs, d.reconnectMinMs, 'reconnectMinMs'),
    reconnectMaxMs: posInt(options.reconnectMaxMs, d.reconnectMaxMs, 'reconnectMaxMs'),
    pingIntervalMs: posInt(options.pingIntervalMs, d.pingIntervalMs, 'pingIntervalMs'),
    quietPingIntervalMs: posInt(options.quietPingIntervalMs, d.quietPingIntervalMs, 'quietPingIntervalMs'),
    livenessTimeoutMs: posInt(options.livenessTimeoutMs, d.livenessTimeoutMs, 'livenessTimeoutMs'),
    invalidateTimeoutMs: posInt(options.invalidateTimeoutMs, d.invalidateTimeoutMs, 'invalidateTimeoutMs'),
    maxPendingInvalidations: posInt(
      options.maxPendingInvalidations,
      d.maxPendingInvalidations,
      'maxPendingInvalidations',
    ),
    maxBufferedBytes: posInt(options.maxBufferedBytes, d.maxBufferedBytes, 'maxBufferedBytes'),
    sampleRate: rate(options.sampleRate, d.sampleRate),
    maxLoadsInFlight: posInt(options.maxLoadsInFlight, d.maxLoadsInFlight, 'maxLoadsInFlight'),
    maxLoadsQueued: nonNegInt(options.maxLoadsQueued, d.maxLoadsQueued, 'maxLoadsQueued'),
    loadTimeoutMs: posInt(options.loadTimeoutMs, d.loadTimeoutMs, 'loadTimeoutMs'),
    maxPushBytes: Math.min(MAX_VALUE_BYTES, posInt(options.maxPushBytes, d.maxPushBytes, 'maxPushBytes')),
    pushWaitMs: nonNegInt(options.pushWaitMs, d.pushWaitMs, 'pushWaitMs'),
    surgeLocal: resolveSurgeLocal(options.surgeLocal),
  };
  if (resolved.reconnectMaxMs < resolved.reconnectMinMs)
    throw new TypeError('options.reconnectMaxMs must be at least reconnectMinMs');
  return resolved;
}

/** the fields `surgeLocal` takes (the deprecated `share` among them) */
const SURGE_FIELDS = new Set(Object.keys(DEFAULT_SURGE_LOCAL));

function resolveSurgeLocal(value: boolean | SurgeLocalOptions | undefined): ResolvedClientOptions['surgeLocal'] {
  // on by default: a surge on this instance is spared before the hub has decided (isHot() says
  // yes for it; the 'promote' event is the hub's word)
  if (value === false) return false;
  if (value === true || value === undefined) return DEFAULT_SURGE_LOCAL;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new TypeError('options.surgeLocal must be a boolean or an object');
  for (const name of Object.keys(value))
    if (!SURGE_FIELDS.has(name))
      throw new TypeError(`options.surgeLocal.${name} is not an option (${[...SURGE_FIELDS].join(', ')})`);
  const d = DEFAULT_SURGE_LOCAL;
  return Object.freeze({
    fraction: surgeFraction(value, d.fraction),
    minAccesses: posInt(value.minAccesses, d.minAccesses, 'surgeLocal.minAccesses'),
    jobAccesses: nonNegInt(value.jobAccesses, d.jobAccesses, 'surgeLocal.jobAccesses'),
    maxKeys: posInt(value.maxKeys, d.maxKeys, 'surgeLocal.maxKeys'),
    maxBytes: posInt(value.maxBytes, d.maxBytes, 'surgeLocal.maxBytes'),
    confirmWindows: posInt(value.confirmWindows, d.confirmWindows, 'surgeLocal.confirmWindows'),
    retryMs: nonNegInt(value.retryMs, d.retryMs, 'surgeLocal.retryMs'),
  });
}

/** `fraction`, or its deprecated name `share`: one of them, or both saying the same. */
function surgeFraction(value: SurgeLocalOptions, fallback: number): number {
  const { fraction, share } = value;
  if (fraction !== undefined && share !== undefined && !Object.is(fraction, share))
    throw new TypeError(
      `options.surgeLocal.fraction is ${String(fraction)} but share, its deprecated name, is ${String(share)}: give fraction only`,
    );
  const given = fraction ?? share ?? fallback;
  if (typeof given !== 'number' || !(given > 0 && given <= 1)) {
    const as = fraction === undefined ? ' (given as share, its deprecated name)' : '';
    throw new TypeError(`options.surgeLocal.fraction${as} must be a number in (0, 1], got ${String(given)}`);
  }
  return given;
}

function posInt(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1)
    throw new TypeError(`options.${name} must be a positive integer, got ${String(value)}`);
  return value;
}

function rate(value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value > 0 && value <= 1))
    throw new TypeError(`options.sampleRate must be a number in (0, 1], got ${String(value)}`);
  return value;
}

function nonNegInt(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0)
    throw new TypeError(`options.${name} must be a non-negative integer, got ${String(value)}`);
  return value;
}
