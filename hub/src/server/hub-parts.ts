/**
 * The parts `startHub` (hub.ts) wires together, one builder each: the settings it resolves from
 * its options and config, the core with its metrics and fan-out threads, the live config (what a
 * reload changes), the dashboard feed, and the one HTTP(S) server that carries the API, the page
 * and the WebSocket upgrades.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { buildDashboard } from '@hotkey/dashboard';
import { LocalCoordinator } from '../cluster/local-coordinator.ts';
import type { Coordinator } from '../core/coordinator.ts';
import { HubCore } from '../core/hub-core.ts';
import { KeyPrivacy } from '../core/observe/key-privacy.ts';
import type { Logger } from '../core/logger.ts';
import { DEFAULT_TUNABLES, type HubTunables } from '../core/tunables.ts';
import { DashboardFeed } from '../http/dashboard-feed.ts';
import { fallbackPageHtml } from '../http/fallback-page.ts';
import { createHttpHandler } from '../http/http-api.ts';
import { MetricsRegistry } from '../http/metrics.ts';
import { guardHttpServer, httpServerOptions, type HttpGuardStats } from './admission.ts';
import { loadHubConfig, parseHubConfig, type HubConfig } from './config.ts';
import { FanoutThreads } from './fanout-threads.ts';
import { LiveConfig } from './live-config.ts';
import { createLogger } from './logger.ts';
import type { HubOptions, HubTlsOptions } from './options.ts';
import type { SocketServer } from './socket-server.ts';
import { checkTls, loadTls } from './tls.ts';

/** What a hub's options and config resolve to before any part is built. */
export interface HubSetup {
  id: string;
  tunables: HubTunables;
  logger: Logger;
  /** wall clock in ms */
  wallNow: () => number;
  /** undefined: started without a config file (open mode) */
  config: HubConfig | undefined;
  open: boolean;
  tls: HubTlsOptions | undefined;
  coordinator: Coordinator;
}

/** Checks the tunables, loads the config and the TLS pair, picks the id and the coordinator. */
export async function resolveSetup(options: HubOptions): Promise<HubSetup> {
  const tunables = checkTunables(options.tunables);
  const logger = options.logger ?? createLogger({ level: 'warn', out: process.stderr });
  let config: HubConfig | undefined;
  if (options.config !== undefined) config = parseHubConfig(options.config);
  else if (options.configPath !== undefined) config = await loadHubConfig(options.configPath);
  // options.tls (PEM) wins over the config file's tls (file paths)
  const tls = options.tls ?? (config?.tls === undefined ? undefined : await loadTls(config.tls));
  if (tls !== undefined) checkTls(tls);
  const id = options.coordinator?.selfId ?? options.nodeId ?? `hub-${randomBytes(4).toString('hex')}`;
  const coordinator = options.coordinator ?? new LocalCoordinator({ selfId: id, config, maxApps: tunables.maxApps });
  return {
    id,
    tunables,
    logger,
    wallNow: options.now ?? Date.now,
    config,
    open: config === undefined,
    tls,
    coordinator,
  };
}

export function checkTunables(input: Partial<HubTunables> | undefined): HubTunables {
  const t = { ...DEFAULT_TUNABLES, ...input };
  for (const [name, value] of Object.entries(t)) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      throw new TypeError(`tunables.${name} must be a non-negative finite number, got ${String(value)}`);
  }
  if (!(t.localThresholdFraction > 0 && t.localThresholdFraction <= 1))
    throw new TypeError('tunables.localThresholdFraction must be in (0, 1]');
  if (t.tickMs < 1) throw new TypeError('tunables.tickMs must be at least 1');
  if (!(t.leaseMs >= 1 && t.leaseMs <= 3_600_000))
    throw new TypeError('tunables.leaseMs must be between 1 and 3600000');
  return t;
}

/** The core with what it reports to: the /metrics registry and the fan-out threads. */
export function buildCore({ id, coordinator, tunables, wallNow, logger, config, open }: HubSetup) {
  const metrics = new MetricsRegistry({ maxAppLabels: open ? tunables.maxAppLabels : Infinity });
  const fanout = new FanoutThreads({
    threads: tunables.fanoutThreads,
    minSockets: tunables.fanoutThreadsMinSockets,
    onFailure: (err) =>
      logger.error(
        { evt: 'fanout_threads_failed', err },
        'fan-out threads stopped; the event loop writes every socket',
      ),
  });
  const keyPrivacy = new KeyPrivacy(config?.keySecret, config?.apps);
  const core = new HubCore({
    id,
    coordinator,
    tunables,
    wallNow,
    logger,
    bulk: fanout.threads > 0 ? fanout : undefined,
    keyPrivacy,
  });
  core.metrics.observer = metrics;
  // a coordinator with loss counters shares a store (Redis): say whether it is reachable
  if (coordinator.stats !== undefined)
    metrics.addSeries({
      name: 'hotkey_redis_up',
      type: 'gauge',
      help: '1 while the shared store (Redis) is reachable, 0 while this hub serves on its last known state.',
      read: () => (coordinator.health().state === 'ok' ? 1 : 0),
    });
  return { core, metrics, fanout, keyPrivacy };
}

/** What a reload changes; a reload that changes how keys are shown reports the field `keys`. */
export function buildLiveConfig(
  { coordinator, tls, logger, config }: HubSetup,
  options: HubOptions,
  keyPrivacy: KeyPrivacy,
): LiveConfig {
  const live = new LiveConfig({
    coordinator,
    tls: tls !== undefined,
    tlsPair: tls,
    logger,
    config,
    fixed: { adminToken: options.adminToken, dashboardToken: options.dashboardToken },
  });
  let shownBy = JSON.stringify(keyPrivacySettings(config));
  live.onApply((next) => {
    keyPrivacy.configure(next.keySecret, next.apps);
    const before = shownBy;
    shownBy = JSON.stringify(keyPrivacySettings(next));
    return before === shownBy ? [] : ['keys'];
  });
  return live;
}

/** what of a config decides how keys are shown (for a reload's list of changed fields) */
function keyPrivacySettings(config: HubConfig | undefined): unknown {
  if (config === undefined) return undefined;
  const apps = Object.entries(config.apps)
    .filter(([, a]) => (a.keys ?? 'plain') !== 'plain')
    .map(([name, a]) => [name, a.keys, a.keepPrefix]);
  return [apps.length === 0 ? undefined : config.keySecret, apps];
}

export function buildFeed(core: HubCore, live: LiveConfig, { tunables, logger }: HubSetup): DashboardFeed {
  // the live config: a reload changes the tokens, and the feed reads them at every check
  return new DashboardFeed({
    source: core,
    tokens: live,
    helloTimeoutMs: tunables.helloTimeoutMs,
    maxBufferBytes: tunables.maxBufferedBytes,
    logger,
  });
}

/**
 * The HTTP(S) server of the port: the API and the page (the dashboard bundled in memory; the
 * fallback page when that fails), WebSocket upgrades to `sockets`, admission guards. Not listening yet.
 */
export async function buildHttpServer(parts: {
  setup: HubSetup;
  core: HubCore;
  live: LiveConfig;
  feed: DashboardFeed;
  sockets: SocketServer;
  metrics: MetricsRegistry;
  ready: () => boolean;
}): Promise<Server> {
  const { setup, core, live, feed, sockets, metrics } = parts;
  const { id, tunables, logger, tls } = setup;
  // the page is bundled in memory at start (~100 ms); without it the fallback page still works
  const dashboard = await buildDashboard().catch((err: unknown) => {
    logger.warn({ evt: 'dashboard_build_failed', err }, 'dashboard build failed, serving the plain page');
    return undefined;
  });
  let httpGuard: (() => HttpGuardStats) | undefined;
  // the live config: a reload changes the tokens, and the API reads them at every check
  const handler = createHttpHandler({
    core,
    tokens: live,
    maxBodyBytes: tunables.maxBodyBytes,
    ready: parts.ready,
    page: () => fallbackPageHtml(id),
    asset: (path) => dashboard?.get(path),
    feedCounters: () => ({ pages: feed.dashboards, ...feed.stats }),
    admissionCounters: () => {
      const http = httpGuard?.() ?? { pending: 0, evicted: 0 };
      return { ...sockets.counters, httpPending: http.pending, httpEvicted: http.evicted };
    },
    metrics,
    logger,
  });
  // node:https is a node:http Server underneath: the ws upgrade handling below is the same
  const httpServer: Server =
    tls === undefined
      ? createServer(httpServerOptions(tunables), handler)
      : createTlsServer({ ...httpServerOptions(tunables), cert: tls.cert, key: tls.key }, handler);
  live.server = httpServer;
  httpGuard = guardHttpServer(httpServer, tunables);
  warnOfConnectionCap(httpGuard().maxConnections, tunables, logger);
  httpServer.on('upgrade', (req, socket, head) => sockets.handleUpgrade(req, socket, head));
  httpServer.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });
  if (tls !== undefined) {
    // a client that fails the handshake (a CA it does not trust, plain HTTP on the TLS port) is worth a line
    httpServer.on('tlsClientError', (err: Error & { code?: string }, socket) => {
      logger.info(
        { evt: 'tls_refused', code: err.code, reason: err.message, remote: socket.remoteAddress },
        'TLS handshake failed',
      );
    });
  }
  return httpServer;
}

function warnOfConnectionCap(maxConnections: number, tunables: HubTunables, logger: Logger): void {
  if (maxConnections >= tunables.maxSessionsPerApp) return;
  // the usual `ulimit -n` of 1024 would cap a hub at 896 SDK connections without a word; a cap
  // above the 10,000 instances a hub is sized for is worth a line, not a warning on every start
  const level = maxConnections < Math.min(tunables.maxSessionsPerApp, 10_000) ? 'warn' : 'info';
  logger[level](
    { evt: 'connection_cap', maxConnections, maxSessionsPerApp: tunables.maxSessionsPerApp },
    `this hub accepts at most ${maxConnections} connections (open-file limit or maxConnections), fewer than maxSessionsPerApp: raise \`ulimit -n\` (about one descriptor per SDK connection, plus 128)`,
  );
}

/** Resolves once `server` listens; rejects with the listen error (a port in use). */
export function listen(server: Server, at: { port: number; host: string; backlog: number }): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(at, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
