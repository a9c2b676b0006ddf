/**
 * `startHub`: one node:http server on one port carries the WebSocket endpoint (`/ws`), the REST
 * API, health, metrics and the page. The hub core decides; the coordinator connects it to the
 * cluster (a LocalCoordinator when running alone). Its parts are built in hub-parts.ts.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
// msgpackr's root entry, for its side effect: it installs the native string extractor
// (msgpackr-extract, when present) into the decoder the SDK's codec shares (sdk/src/wire/codec.ts
// loads only msgpackr's `pack` entry, to keep services' heap small).
import 'msgpackr';
import { CloseCode } from '@hotkey/sdk/protocol';
import type { Coordinator } from '../core/coordinator.ts';
import type { HubCore } from '../core/hub-core.ts';
import type { Logger } from '../core/logger.ts';
import { LIVE_PATH, type DashboardFeed } from '../http/dashboard-feed.ts';
import type { Notifier } from '../notify/notifier.ts';
import type { FanoutThreads } from './fanout-threads.ts';
import { buildCore, buildFeed, buildHttpServer, buildLiveConfig, listen, resolveSetup } from './hub-parts.ts';
import type { LiveConfig, ReloadResult, ReloadSource } from './live-config.ts';
import { startNotifications } from './notifications.ts';
import { DEFAULT_HOST, DEFAULT_PORT, type HubOptions } from './options.ts';
import { SocketServer, WS_PATH } from './socket-server.ts';

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
  const setup = await resolveSetup(options);
  const { id, coordinator, tunables, logger, tls } = setup;
  const { core, metrics, fanout, keyPrivacy } = buildCore(setup);
  const live = buildLiveConfig(setup, options, keyPrivacy);
  const notifier = startNotifications({ hubId: id, coordinator, live, metrics, logger });
  const feed = buildFeed(core, live, setup);
  const sockets = new SocketServer(
    core,
    { [LIVE_PATH]: (peer) => feed.attach(peer) },
    { allowedOrigins: options.allowedOrigins ?? setup.config?.allowedOrigins },
  );
  const host = options.host ?? DEFAULT_HOST;
  let hub: Hub | undefined;
  const httpServer = await buildHttpServer({
    setup,
    core,
    live,
    feed,
    sockets,
    metrics,
    ready: () => hub?.ready ?? false,
  });
  await listen(httpServer, { port: options.port ?? DEFAULT_PORT, host, backlog: tunables.listenBacklog });
  httpServer.on('error', (err) => logger.error({ evt: 'http_server_error', err }, 'http server error'));
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
    open: setup.open && options.coordinator === undefined,
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
