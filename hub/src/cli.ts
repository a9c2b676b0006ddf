/**
 * `hotkey-hub`: run a hub from the command line. Flags win over HOTKEY_* environment variables.
 * Prints a human line and one machine-readable `HOTKEY_READY {json}` line that tests parse.
 * Exit codes: 0 after a graceful SIGTERM/SIGINT, 1 bad config or start failure, 2 bad usage.
 */
import { parseArgs } from 'node:util';
import { ValidationError } from '@hotkey/sdk';
import { RedisCoordinator } from './cluster/redis-coordinator.ts';
import { startDemo } from './demo/demo.ts';
import { loadHubConfig, parseOrigins, type HubConfig } from './server/config.ts';
import { startHub } from './server/hub.ts';
import { DEFAULT_HOST, DEFAULT_PORT } from './server/options.ts';

const USAGE = `usage: hotkey-hub [options]

  --port N              TCP port, 0 = any free port (env HOTKEY_PORT, default ${DEFAULT_PORT})
  --host ADDR           interface to listen on (env HOTKEY_HOST, default ${DEFAULT_HOST})
  --config FILE         JSON config: apps, tokens, rules (env HOTKEY_CONFIG; none = OPEN mode)
  --admin-token T       bearer token for API writes (env HOTKEY_ADMIN_TOKEN; none = writes refused)
  --dashboard-token T   bearer token for API reads and the page (env HOTKEY_DASHBOARD_TOKEN)
  --node-id ID          this hub's id in a cluster (env HOTKEY_NODE_ID, default random)
  --advertise-url URL   ws:// URL SDKs use to reach this hub (env HOTKEY_ADVERTISE_URL)
  --redis URL           join a cluster through Redis, e.g. redis://127.0.0.1:6379 (env HOTKEY_REDIS)
  --allow-origin O      browser origin allowed to open /ws and /live, e.g. https://ops.example.com or *;
                        repeatable (env HOTKEY_ALLOW_ORIGIN, comma-separated; config allowedOrigins)
  --demo                also run the built-in demo traffic
  --help                show this help
`;

function usageError(message: string): never {
  process.stderr.write(`hotkey-hub: ${message}\n\n${USAGE}`);
  process.exit(2);
}

function parse() {
  try {
    return parseArgs({
      strict: true,
      allowPositionals: false,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        config: { type: 'string' },
        'admin-token': { type: 'string' },
        'dashboard-token': { type: 'string' },
        'node-id': { type: 'string' },
        'advertise-url': { type: 'string' },
        redis: { type: 'string' },
        'allow-origin': { type: 'string', multiple: true },
        demo: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
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

function portOf(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_PORT;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) usageError(`--port must be an integer from 0 to 65535, got "${raw}"`);
  return port;
}

/** The cluster seam: with `--redis`, hubs share members, rules and history through Redis. */
function clusterCoordinator(url: string, nodeId: string | undefined, config: HubConfig | undefined): RedisCoordinator {
  if (!/^rediss?:\/\//.test(url)) usageError(`--redis must be a redis:// URL, got "${url}"`);
  return new RedisCoordinator({ url, nodeId, apps: config?.apps ?? {}, open: config === undefined });
}

async function main(): Promise<void> {
  const args = parse();
  if (args.help) {
    process.stdout.write(USAGE);
    return;
  }
  const env = process.env;
  const port = portOf(nonEmpty('--port', args.port ?? env.HOTKEY_PORT));
  const host = nonEmpty('--host', args.host ?? env.HOTKEY_HOST) ?? DEFAULT_HOST;
  const configPath = nonEmpty('--config', args.config ?? env.HOTKEY_CONFIG);
  const adminToken = nonEmpty('--admin-token', args['admin-token'] ?? env.HOTKEY_ADMIN_TOKEN);
  const dashboardToken = nonEmpty('--dashboard-token', args['dashboard-token'] ?? env.HOTKEY_DASHBOARD_TOKEN);
  const nodeId = nonEmpty('--node-id', args['node-id'] ?? env.HOTKEY_NODE_ID);
  const advertiseUrl = nonEmpty('--advertise-url', args['advertise-url'] ?? env.HOTKEY_ADVERTISE_URL);
  const redis = nonEmpty('--redis', args.redis ?? env.HOTKEY_REDIS);
  if (advertiseUrl !== undefined && !/^wss?:\/\//.test(advertiseUrl)) usageError(`--advertise-url must be a ws:// or wss:// URL, got "${advertiseUrl}"`);

  let config: HubConfig | undefined;
  try {
    if (configPath !== undefined) config = await loadHubConfig(configPath);
  } catch (err) {
    if (err instanceof ValidationError) {
      process.stderr.write(`config error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const originsRaw = args['allow-origin'] ?? env.HOTKEY_ALLOW_ORIGIN?.split(',').map((o) => o.trim()).filter((o) => o !== '');
  let allowedOrigins: string[] | undefined;
  try {
    if (originsRaw !== undefined) allowedOrigins = parseOrigins(originsRaw, '--allow-origin');
  } catch (err) {
    usageError((err as Error).message);
  }
  const coordinator = redis === undefined ? undefined : clusterCoordinator(redis, nodeId, config);

  const hub = await startHub({ port, host, config, coordinator, adminToken, dashboardToken, nodeId, advertiseUrl, allowedOrigins });
  const pageUrl = `${hub.httpUrl}/`;
  process.stdout.write(`hotkey hub ${hub.id} listening on ${hub.url} — dashboard ${pageUrl}${redis ? ` — cluster via ${redis.replace(/\/\/[^@]*@/, '//***@')}` : ''}\n`);
  if (config === undefined) process.stdout.write('running OPEN: no --config, so any app is accepted without a token, with the default rule (1000 accesses per 1 s)\n');
  if (adminToken === undefined && config?.adminToken === undefined) process.stdout.write('API writes are disabled: set --admin-token to change rules, invalidate or promote over HTTP\n');
  process.stdout.write(`HOTKEY_READY ${JSON.stringify({ id: hub.id, port: hub.port, url: hub.url, http: hub.httpUrl })}\n`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`hotkey hub ${hub.id}: ${signal}, closing\n`);
    const force = setTimeout(() => {
      process.stderr.write('hotkey-hub: graceful close took over 10 s, exiting\n');
      process.exit(1);
    }, 10_000);
    force.unref();
    hub.close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`hotkey-hub: close failed: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  if (args.demo) await startDemo(hub);
}

main().catch((err: unknown) => {
  if (err instanceof ValidationError) process.stderr.write(`config error: ${err.message}\n`);
  else process.stderr.write(`hotkey-hub: cannot start: ${(err as Error)?.message ?? String(err)}\n`);
  process.exit(1);
});
