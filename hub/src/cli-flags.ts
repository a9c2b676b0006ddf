/**
 * The flags of `hotkey-hub` as data: how node:util parseArgs reads each one (OPTIONS) and what the
 * reference says of it (FLAG_DOCS: its HOTKEY_* variable, value, default and meaning). The type of
 * FLAG_DOCS asks for one entry per flag, so a flag cannot be added without its line in the docs
 * (docs/reference/cli.md is generated from this file: `pnpm docs:reference`).
 */
import type { ParseArgsConfig } from 'node:util';
import { DEFAULT_TUNABLES, type HubTunables } from './core/tunables.ts';
import { LOG_LEVELS } from './core/logger.ts';
import { DEFAULT_HOST, DEFAULT_PORT } from './server/options.ts';

export const OPTIONS = {
  port: { type: 'string' },
  host: { type: 'string' },
  config: { type: 'string' },
  'admin-token': { type: 'string' },
  'dashboard-token': { type: 'string' },
  'node-id': { type: 'string' },
  'advertise-url': { type: 'string' },
  redis: { type: 'string' },
  'lease-ms': { type: 'string' },
  'max-sessions-per-app': { type: 'string' },
  'max-keys-per-app': { type: 'string' },
  'max-connections': { type: 'string' },
  'fanout-threads': { type: 'string' },
  'handoff-max-keys': { type: 'string' },
  'redis-ca': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'log-level': { type: 'string' },
  'log-pretty': { type: 'boolean', default: false },
  'allow-origin': { type: 'string', multiple: true },
  'watch-config': { type: 'boolean', default: false },
  demo: { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
} as const satisfies ParseArgsConfig['options'];

export interface FlagDoc {
  /** the value's placeholder in `--flag VALUE`; absent for a switch */
  value?: string;
  /** the environment variable read when the flag is absent, as it is set (`HOTKEY_LOG_PRETTY=1`) */
  env?: string;
  /** what holds when neither is given */
  default: string;
  /** what it does */
  doc: string;
  /** the hub tunable it sets (core/tunables.ts) */
  tunable?: keyof HubTunables;
}

export const FLAG_DOCS: { readonly [K in keyof typeof OPTIONS]: FlagDoc } = {
  port: { value: 'N', env: 'HOTKEY_PORT', default: `${DEFAULT_PORT}`, doc: 'TCP port; 0 = any free port' },
  host: { value: 'ADDR', env: 'HOTKEY_HOST', default: DEFAULT_HOST, doc: 'interface to listen on' },
  config: {
    value: 'FILE',
    env: 'HOTKEY_CONFIG',
    default: 'none: open mode',
    doc: 'JSON config: apps, tokens, rules',
  },
  'admin-token': {
    value: 'T',
    env: 'HOTKEY_ADMIN_TOKEN',
    default: 'none: API writes refused (403)',
    doc: 'bearer token for API writes',
  },
  'dashboard-token': {
    value: 'T',
    env: 'HOTKEY_DASHBOARD_TOKEN',
    default: 'none: API reads open',
    doc: 'bearer token for API reads and the page',
  },
  'node-id': { value: 'ID', env: 'HOTKEY_NODE_ID', default: '`hub-<random>`', doc: "this hub's id in a cluster" },
  'advertise-url': {
    value: 'URL',
    env: 'HOTKEY_ADVERTISE_URL',
    default: '`ws://<host>:<port>/ws`',
    doc: 'the `ws://` or `wss://` URL SDKs and other hubs use to reach this hub',
  },
  redis: {
    value: 'URL',
    env: 'HOTKEY_REDIS',
    default: 'none: a single hub',
    doc: 'join a cluster through Redis (`redis://`, or `rediss://` for TLS)',
  },
  'lease-ms': {
    value: 'N',
    env: 'HOTKEY_LEASE_MS',
    default: `${DEFAULT_TUNABLES.leaseMs}`,
    doc: 'the lease each SDK session gets: bounds write latency under a partition',
    tunable: 'leaseMs',
  },
  'max-sessions-per-app': {
    value: 'N',
    env: 'HOTKEY_MAX_SESSIONS_PER_APP',
    default: `${DEFAULT_TUNABLES.maxSessionsPerApp}`,
    doc: 'SDK connections one app may hold on this hub',
    tunable: 'maxSessionsPerApp',
  },
  'max-keys-per-app': {
    value: 'N',
    env: 'HOTKEY_MAX_KEYS_PER_APP',
    default: `${DEFAULT_TUNABLES.maxKeysPerApp}`,
    doc: "keys one app's table tracks at most",
    tunable: 'maxKeysPerApp',
  },
  'max-connections': {
    value: 'N',
    env: 'HOTKEY_MAX_CONNECTIONS',
    default: `${DEFAULT_TUNABLES.maxConnections}`,
    doc: 'TCP connections in all; 0 = the open-file limit minus 128',
    tunable: 'maxConnections',
  },
  'fanout-threads': {
    value: 'N',
    env: 'HOTKEY_FANOUT_THREADS',
    default: `${DEFAULT_TUNABLES.fanoutThreads}`,
    doc: `threads besides the event loop that write a broadcast to ${DEFAULT_TUNABLES.fanoutThreadsMinSockets}+ sockets, never more than the CPUs minus one; 0 = none`,
    tunable: 'fanoutThreads',
  },
  'handoff-max-keys': {
    value: 'N',
    env: 'HOTKEY_HANDOFF_MAX_KEYS',
    default: `${DEFAULT_TUNABLES.handoffMaxKeys}`,
    doc: 'keys handed to their new owner, with their windows, per membership change; 0 = none',
    tunable: 'handoffMaxKeys',
  },
  'redis-ca': {
    value: 'FILE',
    env: 'HOTKEY_REDIS_CA',
    default: 'the system CAs',
    doc: "PEM CA that signed the `rediss://` server's certificate (needs `--redis`)",
  },
  'tls-cert': {
    value: 'FILE',
    env: 'HOTKEY_TLS_CERT',
    default: 'none: plain HTTP and WS',
    doc: 'PEM certificate (chain): serve HTTPS and WSS on the port; config key `tls.cert`',
  },
  'tls-key': {
    value: 'FILE',
    env: 'HOTKEY_TLS_KEY',
    default: 'none',
    doc: 'PEM private key of `--tls-cert` (required with it); config key `tls.key`',
  },
  'log-level': {
    value: 'L',
    env: 'HOTKEY_LOG_LEVEL',
    default: 'info',
    doc: `one of ${LOG_LEVELS.map((l) => `\`${l}\``).join(', ')}`,
  },
  'log-pretty': {
    env: 'HOTKEY_LOG_PRETTY=1',
    default: 'on when stdout is a TTY (`HOTKEY_LOG_PRETTY=0` turns it off)',
    doc: 'human log lines instead of JSON',
  },
  'allow-origin': {
    value: 'O',
    env: 'HOTKEY_ALLOW_ORIGIN',
    default: 'none: browsers may open only `/live`, and only from the hub\u2019s own page',
    doc: 'browser origin allowed to open `/ws` and `/live` (`https://ops.example.com`, or `*`); repeatable, the variable comma-separated; config `allowedOrigins`',
  },
  'watch-config': {
    env: 'HOTKEY_WATCH_CONFIG=1',
    default: 'off',
    doc: 'reload when the config file or the TLS files change, as on SIGHUP',
  },
  demo: { default: 'off', doc: 'also run the built-in demo traffic (`pnpm demo`)' },
  help: { default: 'off', doc: 'print the usage text' },
};

/** Variables with no flag: read where their setting is (server/config.ts for the key secret). */
export const ENV_ONLY: Readonly<Record<string, FlagDoc>> = {
  HOTKEY_KEY_SECRET: {
    default: 'none',
    doc: 'the `keySecret` of apps with `keys: "hash"` (key privacy); the config file wins',
  },
};

const FLAG_COLUMN = 24;
const WIDTH = 108;

/** `text` as words after `first` (padded to the flag column), wrapped at WIDTH under that column. */
function wrap(first: string, text: string): string {
  const lines: string[] = [];
  let line = first.padEnd(FLAG_COLUMN);
  let empty = true;
  for (const word of text.split(' ')) {
    if (!empty && line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = ' '.repeat(FLAG_COLUMN);
      empty = true;
    }
    line += empty ? word : ` ${word}`;
    empty = false;
  }
  lines.push(line);
  return lines.join('\n');
}

/**
 * The `--help` text, from FLAG_DOCS: the usage text and the reference page are two views of one
 * table, so neither can drift from the flags parseArgs reads.
 */
export function usageText(): string {
  const rows = Object.entries(FLAG_DOCS).map(([flag, d]) => {
    const name = `  --${flag}${d.value === undefined ? '' : ` ${d.value}`}`;
    const where = [d.env === undefined ? undefined : `env ${d.env}`, `default ${d.default}`]
      .filter((s) => s !== undefined)
      .join(', ');
    const text = `${d.doc} (${where})`.replaceAll('`', '');
    return name.length >= FLAG_COLUMN ? `${name}\n${wrap('', text)}` : wrap(name, text);
  });
  return `usage: hotkey-hub [options]\n\n${rows.join('\n')}\n`;
}
