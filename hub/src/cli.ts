/**
 * `hotkey-hub`: run a hub from the command line. Flags win over HOTKEY_* environment variables.
 * Logs JSON lines on stdout (human lines on a TTY or with --log-pretty), plus one machine-readable
 * `HOTKEY_READY {json}` line that tests and supervisors parse.
 * Exit codes: 0 after a graceful SIGTERM/SIGINT, 1 bad config or start failure, 2 bad usage.
 * SIGHUP re-reads the config file and the TLS files (server/live-config.ts); a bad file is refused.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { ValidationError } from '@hotkey/sdk';
import { OPTIONS, usageText } from './cli-flags.ts';
import { RedisCoordinator } from './cluster/redis-coordinator.ts';
import { startDemo } from './demo/demo.ts';
import { loadHubConfig, parseOrigins, type HubConfig } from './server/config.ts';
import { startHub, type Hub } from './server/hub.ts';
import type { ReloadSource } from './server/live-config.ts';
import { watchConfigFiles } from './server/config-watch.ts';
import { isLogLevel, LOG_LEVELS, type Logger } from './core/logger.ts';
import { createLogger } from './server/logger.ts';
import { DEFAULT_HOST, DEFAULT_PORT, type HubTlsOptions } from './server/options.ts';
import { loadTls } from './server/tls.ts';

const USAGE = `${usageText()}
A first \`--\` is skipped (\`pnpm start -- --port 8080\` hands it on); after a second, nothing is accepted.
`;

function usageError(message: string): never {
  process.stderr.write(`hotkey-hub: ${message}\n\n${USAGE}`);
  process.exit(2);
}

/**
 * The arguments without their first `--`. pnpm hands it on to the script (`pnpm start -- --port 8080`
 * runs `hotkey-hub -- --port 8080`, and `pnpm demo -- …` runs `hotkey-hub --demo -- …`); the hub takes
 * no operands, so that first `--` can only mean "the user's flags follow". Only the first: a second
 * `--` still ends the options, and what follows it is refused as an operand. A `--` that is the value
 * of a flag (`--admin-token=--`) is a value, not a terminator, and stays.
 */
function withoutForwardedTerminator(args: readonly string[]): string[] {
  const { tokens } = parseArgs({
    args: [...args],
    options: OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const end = tokens.find((t) => t.kind === 'option-terminator');
  return end === undefined ? [...args] : [...args.slice(0, end.index), ...args.slice(end.index + 1)];
}

function parse() {
  try {
    return parseArgs({
      args: withoutForwardedTerminator(process.argv.slice(2)),
      strict: true,
      allowPositionals: false,
      options: OPTIONS,
    }).values;
  } catch (err) {
    usageError((err as Error).message);
  }
}

function nonEmpty(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === '') usageError(`${name} must not be empty`);
  return value;
}

/** An integer flag of at least `min` (undefined when not given). */
function intFlag(name: string, raw: string | undefined, min: number): number | undefined {
  if (nonEmpty(name, raw) === undefined) return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw!) || value < min || value > 10_000_000)
    usageError(`${name} must be an integer from ${min} to 10000000, got "${raw}"`);
  return value;
}

function portOf(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_PORT;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) usageError(`--port must be an integer from 0 to 65535, got "${raw}"`);
  return port;
}

/** The cluster seam: with `--redis`, hubs share members, rules and history through Redis. */
function clusterCoordinator(
  url: string,
  nodeId: string | undefined,
  config: HubConfig | undefined,
  logger: Logger,
  ca: Buffer | undefined,
): RedisCoordinator {
  return new RedisCoordinator({
    url,
    nodeId,
    apps: config?.apps ?? {},
    open: config === undefined,
    logger,
    ...(ca === undefined ? {} : { tls: { ca } }),
  });
}

/** A bad file or value behind a flag: one line naming it, exit 1 (like a bad config file). */
function configError(message: string): never {
  process.stderr.write(`config error: ${message}\n`);
  process.exit(1);
}

/** the running hub, once started: SIGHUP before that is ignored rather than fatal */
let running: Hub | undefined;
let reloadSource: ReloadSource = {};

async function main(): Promise<void> {
  // without a handler SIGHUP terminates node: install it before the slow part of start-up
  process.on('SIGHUP', () => {
    // a refused reload is logged (config_refused, with the field) and the running config stays
    running?.reload(reloadSource).catch(() => {});
  });
  const args = parse();
  if (args.help) {
    process.stdout.write(USAGE);
    return;
  }
  const flags = readFlags(args);
  const files = await loadFiles(flags, args['allow-origin']);
  const logger = createLogger({ level: flags.logLevel, pretty: flags.pretty });
  const hub = await startFromFlags(flags, files, logger);
  running = hub;
  reloadSource = {
    configPath: flags.configPath,
    ...(flags.tlsCert !== undefined && flags.tlsKey !== undefined
      ? { tlsFiles: { cert: flags.tlsCert, key: flags.tlsKey }, tlsNames: { cert: '--tls-cert', key: '--tls-key' } }
      : {}),
  };
  if (flags.watch) {
    const tlsPaths = reloadSource.tlsFiles ?? files.config?.tls;
    const paths = [flags.configPath, tlsPaths?.cert, tlsPaths?.key].filter((p): p is string => p !== undefined);
    watchConfigFiles(paths, () => void hub.reload(reloadSource).catch(() => {}));
  }
  announce(hub, logger, flags, files.config);
  stopOnSignals(hub, logger);
  if (args.demo) await startDemo(hub);
}

/** The flags (or their HOTKEY_* twins), checked one by one: a bad one is a usage error (exit 2). */
function readFlags(args: ReturnType<typeof parse>) {
  const env = process.env;
  const port = portOf(nonEmpty('--port', args.port ?? env.HOTKEY_PORT));
  const host = nonEmpty('--host', args.host ?? env.HOTKEY_HOST) ?? DEFAULT_HOST;
  const configPath = nonEmpty('--config', args.config ?? env.HOTKEY_CONFIG);
  const adminToken = nonEmpty('--admin-token', args['admin-token'] ?? env.HOTKEY_ADMIN_TOKEN);
  const dashboardToken = nonEmpty('--dashboard-token', args['dashboard-token'] ?? env.HOTKEY_DASHBOARD_TOKEN);
  const nodeId = nonEmpty('--node-id', args['node-id'] ?? env.HOTKEY_NODE_ID);
  const advertiseUrl = nonEmpty('--advertise-url', args['advertise-url'] ?? env.HOTKEY_ADVERTISE_URL);
  const redis = nonEmpty('--redis', args.redis ?? env.HOTKEY_REDIS);
  const tunables = readTunables(args);
  const redisCa = nonEmpty('--redis-ca', args['redis-ca'] ?? env.HOTKEY_REDIS_CA);
  const tlsCert = nonEmpty('--tls-cert', args['tls-cert'] ?? env.HOTKEY_TLS_CERT);
  const tlsKey = nonEmpty('--tls-key', args['tls-key'] ?? env.HOTKEY_TLS_KEY);
  const logLevel = nonEmpty('--log-level', args['log-level'] ?? env.HOTKEY_LOG_LEVEL) ?? 'info';
  if (!isLogLevel(logLevel)) usageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  const pretty =
    args['log-pretty'] ||
    env.HOTKEY_LOG_PRETTY === '1' ||
    (env.HOTKEY_LOG_PRETTY !== '0' && process.stdout.isTTY === true);
  if ((tlsCert === undefined) !== (tlsKey === undefined))
    usageError(tlsCert === undefined ? '--tls-key needs --tls-cert' : '--tls-cert needs --tls-key');
  if (redis !== undefined && !/^rediss?:\/\//.test(redis))
    usageError(`--redis must be a redis:// or rediss:// URL, got "${redis}"`);
  if (redisCa !== undefined && redis === undefined) usageError('--redis-ca needs --redis');
  const watch = args['watch-config'] || env.HOTKEY_WATCH_CONFIG === '1';
  if (watch && configPath === undefined && tlsCert === undefined)
    usageError('--watch-config needs --config or --tls-cert');
  if (advertiseUrl !== undefined && !/^wss?:\/\//.test(advertiseUrl))
    usageError(`--advertise-url must be a ws:// or wss:// URL, got "${advertiseUrl}"`);
  return {
    port,
    host,
    configPath,
    adminToken,
    dashboardToken,
    nodeId,
    advertiseUrl,
    redis,
    tunables,
    redisCa,
    tlsCert,
    tlsKey,
    logLevel,
    pretty,
    watch,
  };
}
type Flags = ReturnType<typeof readFlags>;

/** The tunables a flag sets; the others keep their defaults. */
function readTunables(args: ReturnType<typeof parse>) {
  const env = process.env;
  const leaseRaw = nonEmpty('--lease-ms', args['lease-ms'] ?? env.HOTKEY_LEASE_MS);
  const leaseMs = leaseRaw === undefined ? undefined : Number(leaseRaw);
  if (leaseMs !== undefined && (!/^\d+$/.test(leaseRaw!) || leaseMs < 1 || leaseMs > 3_600_000))
    usageError(`--lease-ms must be an integer from 1 to 3600000, got "${leaseRaw}"`);
  const maxSessionsPerApp = intFlag(
    '--max-sessions-per-app',
    args['max-sessions-per-app'] ?? env.HOTKEY_MAX_SESSIONS_PER_APP,
    1,
  );
  const maxKeysPerApp = intFlag('--max-keys-per-app', args['max-keys-per-app'] ?? env.HOTKEY_MAX_KEYS_PER_APP, 1);
  const maxConnections = intFlag('--max-connections', args['max-connections'] ?? env.HOTKEY_MAX_CONNECTIONS, 0);
  const fanoutThreads = intFlag('--fanout-threads', args['fanout-threads'] ?? env.HOTKEY_FANOUT_THREADS, 0);
  const handoffMaxKeys = intFlag('--handoff-max-keys', args['handoff-max-keys'] ?? env.HOTKEY_HANDOFF_MAX_KEYS, 0);
  return Object.fromEntries(
    Object.entries({ leaseMs, maxSessionsPerApp, maxKeysPerApp, maxConnections, fanoutThreads, handoffMaxKeys }).filter(
      ([, v]) => v !== undefined,
    ),
  );
}

/** The files the flags name, and the origins: a bad file is a config error (exit 1), a bad origin a usage error. */
async function loadFiles(flags: Flags, originFlags: string[] | undefined) {
  let config: HubConfig | undefined;
  try {
    if (flags.configPath !== undefined) config = await loadHubConfig(flags.configPath);
  } catch (err) {
    if (err instanceof ValidationError) configError(err.message);
    throw err;
  }
  const originsRaw =
    originFlags ??
    process.env.HOTKEY_ALLOW_ORIGIN?.split(',')
      .map((o) => o.trim())
      .filter((o) => o !== '');
  let allowedOrigins: string[] | undefined;
  try {
    if (originsRaw !== undefined) allowedOrigins = parseOrigins(originsRaw, '--allow-origin');
  } catch (err) {
    usageError((err as Error).message);
  }
  // flags (or their env twins) win over the config file's tls; errors name where the path came from
  const { tlsCert, tlsKey, redisCa } = flags;
  let tls: HubTlsOptions | undefined;
  try {
    if (tlsCert !== undefined && tlsKey !== undefined)
      tls = await loadTls({ cert: tlsCert, key: tlsKey }, { cert: '--tls-cert', key: '--tls-key' });
    else if (config?.tls !== undefined) tls = await loadTls(config.tls);
  } catch (err) {
    if (err instanceof ValidationError) configError(err.message);
    throw err;
  }
  let ca: Buffer | undefined;
  if (redisCa !== undefined)
    ca = await readFile(redisCa).catch((err: NodeJS.ErrnoException) =>
      configError(`--redis-ca: cannot read ${redisCa}: ${err.code ?? err.message}`),
    );
  return { config, allowedOrigins, tls, ca };
}

function startFromFlags(flags: Flags, files: Awaited<ReturnType<typeof loadFiles>>, logger: Logger): Promise<Hub> {
  const { config, tls } = files;
  const coordinator =
    flags.redis === undefined ? undefined : clusterCoordinator(flags.redis, flags.nodeId, config, logger, files.ca);
  return startHub({
    port: flags.port,
    host: flags.host,
    config,
    coordinator,
    adminToken: flags.adminToken,
    dashboardToken: flags.dashboardToken,
    nodeId: flags.nodeId,
    advertiseUrl: flags.advertiseUrl,
    tunables: flags.tunables,
    logger,
    allowedOrigins: files.allowedOrigins,
    ...(tls === undefined ? {} : { tls }),
  });
}

/** The start-up lines: where the hub listens, what is open or disabled, and HOTKEY_READY. */
function announce(hub: Hub, logger: Logger, flags: Flags, config: HubConfig | undefined): void {
  const safeRedis = flags.redis?.replace(/\/\/[^@/]*@/, '//***@');
  const pageUrl = `${hub.httpUrl}/`;
  logger.info(
    { evt: 'listening', id: hub.id, url: hub.url, http: hub.httpUrl, tls: hub.tls, cluster: safeRedis },
    `hotkey hub ${hub.id} listening on ${hub.url} — dashboard ${pageUrl}${safeRedis ? ` — cluster via ${safeRedis}` : ''}`,
  );
  if (config === undefined)
    logger.warn(
      { evt: 'open_mode' },
      'running OPEN: no --config, so any app is accepted without a token, with the default rule (1000 accesses per 1 s)',
    );
  if (flags.adminToken === undefined && config?.adminToken === undefined)
    logger.info(
      { evt: 'api_writes_disabled' },
      'API writes are disabled: set --admin-token to change rules, invalidate or promote over HTTP',
    );
  // the one line that is not JSON: what supervisors and tests wait for
  process.stdout.write(
    `HOTKEY_READY ${JSON.stringify({ id: hub.id, port: hub.port, url: hub.url, http: hub.httpUrl })}\n`,
  );
}

/** SIGTERM / SIGINT close the hub gracefully (exit 0), or exit 1 when that fails or takes over 10 s. */
function stopOnSignals(hub: Hub, logger: Logger): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ evt: 'stopping', id: hub.id, signal }, `hotkey hub ${hub.id}: ${signal}, closing`);
    const force = setTimeout(() => {
      logger.error({ evt: 'stop_timeout', id: hub.id }, 'graceful close took over 10 s, exiting');
      process.exit(1);
    }, 10_000);
    force.unref();
    hub.close().then(
      () => {
        logger.info({ evt: 'stopped', id: hub.id }, 'closed');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ evt: 'stop_failed', id: hub.id, err }, 'close failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof ValidationError) process.stderr.write(`config error: ${err.message}\n`);
  else process.stderr.write(`hotkey-hub: cannot start: ${(err as Error)?.message ?? String(err)}\n`);
  process.exit(1);
});
