/**
 * `startHub`: one node:http server on one port carries the WebSocket endpoint (`/ws`), the REST
 * API, health, metrics and the page. The hub core decides; the coordinator connects it to the
 * cluster (a LocalCoordinator when running alone).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
// msgpackr's root entry, for its side effect: it installs the native string extractor
// (msgpackr-extract, when present) into the decoder the SDK's codec shares (sdk/src/wire/codec.ts
// loads only msgpackr's `pack` entry, to keep services' heap small).
import 'msgpackr';
import { CloseCode } from '@hotkey/sdk/protocol';
import { loadHubConfig, parseHubConfig, type HubConfig } from './config.ts';
import type { Coordinator } from '../core/coordinator.ts';
import { buildDashboard } from '@hotkey/dashboard';
import { DashboardFeed, LIVE_PATH } from '../http/dashboard-feed.ts';
import { fallbackPageHtml } from '../http/fallback-page.ts';
import { createHttpHandler } from '../http/http-api.ts';
import { HubCore } from '../core/hub-core.ts';
import { KeyPrivacy } from '../core/key-privacy.ts';
import { LocalCoordinator } from '../cluster/local-coordinator.ts';
import { MetricsRegistry } from '../http/metrics.ts';
import type { Logger } from '../core/logger.ts';
import { createLogger } from './logger.ts';
import { DEFAULT_HOST, DEFAULT_PORT, type HubOptions } from './options.ts';
import { DEFAULT_TUNABLES, type HubTunables } from '../core/tunables.ts';
import { checkTls, loadTls } from './tls.ts';
import { SocketServer, WS_PATH } from './socket-server.ts';
import { FanoutThreads } from './fanout-threads.ts';
import { guardHttpServer, httpServerOptions, type HttpGuardStats } from './admission.ts';
import { LiveConfig, type ReloadResult, type ReloadSource } from './live-config.ts';
import { startNotifications } from './notifications.ts';
import type { Notifier } from '../notify/notifier.ts';

function checkTunables(input: Partial<HubTunables> | undefined): HubTunables {
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

/** what of a config decides how keys are shown (for a reload's list of changed fields) */
function keyPrivacySettings(config: HubConfig | undefined): unknown {
  if (config === undefined) return undefined;
  const apps = Object.entries(config.apps)
    .filter(([, a]) => (a.keys ?? 'plain') !== 'plain')
    .map(([name, a]) => [name, a.keys, a.keepPrefix]);
  return [apps.length === 0 ? undefined : config.keySecret, apps];
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

export class Hub {
  readonly id: string;
  /** internal: the decisions (sessions, aggregation, broadcasts), for the HTTP API and tests */
  readonly core: HubCore;
  readonly coordinator: Coordinator;
  /** internal: the node:http (or node:https) server, for mounting the dashboard */
  readonly httpServer: Server;
  /** true when the port serves HTTPS and WSS */
  readonly tls: boolean;
  /** the logger every part of this hub writes to */
  readonly logger: Logger;
  /** true when started without a config file: any app, no token, default rule */
  readonly open: boolean;
  /** internal: what a config reload changes (tokens, apps, TLS pair, notify targets) */
  readonly live: LiveConfig;
  readonly #notifier: Notifier;
  readonly #sockets: SocketServer;
  readonly #fanout: FanoutThreads;
  readonly #feed: DashboardFeed | undefined;
  readonly #host: string;
  readonly #advertiseUrl: string | undefined;
  readonly #tickTimer: NodeJS.Timeout; // drives core.tick(): demotions, sweeps, feed samples
  #closing: Promise<void> | undefined;
  ready = false;

  /** @internal use startHub */
  constructor(parts: {
    id: string;
    core: HubCore;
    coordinator: Coordinator;
    httpServer: Server;
    sockets: SocketServer;
    fanout: FanoutThreads;
    feed?: DashboardFeed;
    host: string;
    advertiseUrl?: string;
    open: boolean;
    tls: boolean;
    logger: Logger;
    live: LiveConfig;
    notifier: Notifier;
  }) {
    this.live = parts.live;
    this.#notifier = parts.notifier;
    this.tls = parts.tls;
    this.logger = parts.logger;
    this.id = parts.id;
    this.core = parts.core;
    this.coordinator = parts.coordinator;
    this.httpServer = parts.httpServer;
    this.#sockets = parts.sockets;
    this.#fanout = parts.fanout;
    this.#feed = parts.feed;
    this.#host = parts.host;
    this.#advertiseUrl = parts.advertiseUrl;
    this.open = parts.open;
    this.#tickTimer = setInterval(() => this.core.tick(), this.core.tunables.tickMs);
    this.#tickTimer.unref();
  }

  /** internal: sockets the fan-out threads wrote, and those the event loop finished after them (fanout-threads.ts) */
  get fanoutStats(): { readonly byHelpers: number; readonly finishedByLoop: number } {
    return this.#fanout.stats;
  }

  get port(): number {
    return (this.httpServer.address() as AddressInfo | null)?.port ?? 0;
  }
  /** ws:// (wss:// with TLS) URL SDKs connect to (the advertised one when set) */
  get url(): string {
    return this.#advertiseUrl ?? `${this.tls ? 'wss' : 'ws'}://${urlHost(this.#host)}:${this.port}${WS_PATH}`;
  }
  /** http:// (https:// with TLS) base URL of the API and the page on this process */
  get httpUrl(): string {
    return `${this.tls ? 'https' : 'http'}://${urlHost(this.#host)}:${this.port}`;
  }

  /**
   * Re-reads the config (SIGHUP on the CLI): tokens, apps, rules, the TLS pair and notify targets
   * change without a restart; live connections stay. Rejects with ValidationError (HK_ERR_CONFIG)
   * naming the field and changes nothing when the new config is bad (see live-config.ts).
   */
  reload(source: ReloadSource): Promise<ReloadResult> {
    return this.live.reload(source);
  }

  /**
   * Graceful close: leave the cluster first (so reconnecting SDKs learn the new member list), close
   * SDK sockets with 4010 when clustered or 1001 alone, ack pending invalidations, stop the server.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.ready = false;
    clearInterval(this.#tickTimer);
    try {
      await this.coordinator.leave();
      // the SDKs heard of the leave: the reports they sent before it are counted, then handed over
      await this.core.handoffSettled();
    } catch {
      // leaving is best effort: the member's heartbeat expires anyway
    }
    this.core.shutdown(this.core.clustered ? CloseCode.Leaving : CloseCode.GoingAway, 'hub shutting down');
    this.#feed?.close(CloseCode.GoingAway, 'hub shutting down');
    this.#notifier.close();
    const httpClosed = new Promise<void>((resolve) => this.httpServer.close(() => resolve()));
    this.httpServer.closeIdleConnections();
    await this.#sockets.close();
    await this.#fanout.close();
    this.httpServer.closeAllConnections();
    await httpClosed;
    try {
      await this.coordinator.close();
    } catch {
      // nothing left to do with a coordinator that fails to close
    }
  }
}

/** Starts a hub; resolves once it listens and has joined its cluster. Bad config throws ValidationError (HK_ERR_CONFIG). */
export async function startHub(options: HubOptions = {}): Promise<Hub> {
  const tunables = checkTunables(options.tunables);
  const logger = options.logger ?? createLogger({ level: 'warn', out: process.stderr });
  const now = options.now ?? Date.now;
  let config: HubConfig | undefined;
  if (options.config !== undefined) config = parseHubConfig(options.config);
  else if (options.configPath !== undefined) config = await loadHubConfig(options.configPath);

  // options.tls (PEM) wins over the config file's tls (file paths)
  const tls = options.tls ?? (config?.tls === undefined ? undefined : await loadTls(config.tls));
  if (tls !== undefined) checkTls(tls);

  const id = options.coordinator?.selfId ?? options.nodeId ?? `hub-${randomBytes(4).toString('hex')}`;
  const coordinator = options.coordinator ?? new LocalCoordinator({ selfId: id, config, maxApps: tunables.maxApps });
  const open = config === undefined;
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
    now,
    logger,
    bulk: fanout.threads > 0 ? fanout : undefined,
    keyPrivacy,
  });
  core.metrics.observer = metrics;
  // a coordinator with loss counters shares a store (Redis): say whether it is reachable
  if ((coordinator as Coordinator).stats !== undefined)
    metrics.addSeries({
      name: 'hotkey_redis_up',
      type: 'gauge',
      help: '1 while the shared store (Redis) is reachable, 0 while this hub serves on its last known state.',
      read: () => (coordinator.health().state === 'ok' ? 1 : 0),
    });
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
  const notifier = startNotifications({ hubId: id, coordinator, live, metrics, logger });
  // getters: a reload changes the tokens, and the feed and the API read them at every check
  const feed = new DashboardFeed({
    source: core,
    get adminToken() {
      return live.adminToken;
    },
    get dashboardToken() {
      return live.dashboardToken;
    },
    helloTimeoutMs: tunables.helloTimeoutMs,
    maxBufferBytes: tunables.maxBufferedBytes,
    logger,
  });
  const sockets = new SocketServer(
    core,
    { [LIVE_PATH]: (peer) => feed.attach(peer) },
    { allowedOrigins: options.allowedOrigins ?? config?.allowedOrigins },
  );
  const host = options.host ?? DEFAULT_HOST;
  // the page is bundled in memory at start (~100 ms); without it the fallback page still works
  const dashboard = await buildDashboard().catch((err: unknown) => {
    logger.warn({ evt: 'dashboard_build_failed', err }, 'dashboard build failed, serving the plain page');
    return undefined;
  });
  let hub: Hub | undefined;
  let httpGuard: (() => HttpGuardStats) | undefined;
  const handler = createHttpHandler({
    core,
    get adminToken() {
      return live.adminToken;
    },
    get dashboardToken() {
      return live.dashboardToken;
    },
    maxBodyBytes: tunables.maxBodyBytes,
    ready: () => hub?.ready ?? false,
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
  const { maxConnections } = httpGuard();
  if (maxConnections < tunables.maxSessionsPerApp) {
    // the usual `ulimit -n` of 1024 would cap a hub at 896 SDK connections without a word; a cap
    // above the 10,000 instances a hub is sized for is worth a line, not a warning on every start
    const level = maxConnections < Math.min(tunables.maxSessionsPerApp, 10_000) ? 'warn' : 'info';
    logger[level](
      { evt: 'connection_cap', maxConnections, maxSessionsPerApp: tunables.maxSessionsPerApp },
      `this hub accepts at most ${maxConnections} connections (open-file limit or maxConnections), fewer than maxSessionsPerApp: raise \`ulimit -n\` (about one descriptor per SDK connection, plus 128)`,
    );
  }
  httpServer.on('upgrade', (req, socket, head) => sockets.handleUpgrade(req, socket, head));
  httpServer.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen({ port: options.port ?? DEFAULT_PORT, host, backlog: tunables.listenBacklog }, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  httpServer.on('error', (err) => logger.error({ evt: 'http_server_error', err }, 'http server error'));
  if (tls !== undefined) {
    // a client that fails the handshake (a CA it does not trust, plain HTTP on the TLS port) is worth a line
    httpServer.on('tlsClientError', (err: Error & { code?: string }, socket) => {
      logger.info(
        { evt: 'tls_refused', code: err.code, reason: err.message, remote: socket.remoteAddress },
        'TLS handshake failed',
      );
    });
  }

  hub = new Hub({
    id,
    core,
    coordinator,
    httpServer,
    sockets,
    fanout,
    feed,
    host,
    advertiseUrl: options.advertiseUrl,
    open: open && options.coordinator === undefined,
    tls: tls !== undefined,
    logger,
    live,
    notifier,
  });
  core.url = hub.url;
  try {
    await coordinator.start({ id, url: hub.url });
  } catch (err) {
    await hub.close();
    throw err;
  }
  hub.ready = true;
  core.publishStatus();
  return hub;
}
