/**
 * The hub's config file (JSON). Without one the hub runs open: any app, no token, default rule.
 *
 *   { "apps": { "shop": { "token": "s3cret", "rules": [ { "match": "item:*", "threshold": 500 } ] } },
 *     "adminToken": "…", "dashboardToken": "…", "allowedOrigins": ["https://ops.example.com"] }
 *
 * Validation names the offending field (`apps.shop.rules[0].threshold`) and rejects unknown fields:
 * a typo in a config file must stop start-up, not silently fall back to defaults.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { ErrorCode, ValidationError } from '@hotkey/sdk';
import { parseRules, type Rule } from '@hotkey/sdk/rules';
import { MAX_NAME_LENGTH } from '@hotkey/sdk/protocol';
import { isValidAppName, type AppConfig } from '../core/apps.ts';
import { KEY_MODES, type KeyMode } from '../core/observe/key-privacy.ts';
import { parseNotify, type NotifyTarget } from '../notify/notify-config.ts';

export type { AppConfig };

export interface HubConfig {
  apps: Record<string, AppConfig>;
  adminToken?: string;
  dashboardToken?: string;
  /** PEM files of the hub's certificate and key: serve HTTPS and WSS (relative paths: from the config file's folder) */
  tls?: { cert: string; key: string };
  /** browser origins allowed to open /ws and /live (see HubOptions.allowedOrigins) */
  allowedOrigins?: string[];
  /** webhooks told of promotions, demotions, invalidations, fencing (notify/notify-config.ts) */
  notify?: NotifyTarget[];
  /** the HMAC secret of apps with `keys: "hash"` (or env HOTKEY_KEY_SECRET; core/observe/key-privacy.ts) */
  keySecret?: string;
}

const TOP_LEVEL = new Set(['apps', 'adminToken', 'dashboardToken', 'tls', 'allowedOrigins', 'notify', 'keySecret']);
const APP_FIELDS = new Set(['token', 'rules', 'keys', 'keepPrefix']);
/** a shorter secret is guessable offline from one hashed key */
const MIN_KEY_SECRET = 16;
const MAX_KEEP_PREFIXES = 64;

function fail(field: string, message: string): never {
  throw new ValidationError(ErrorCode.Config, field, message);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function token(v: unknown, field: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.length === 0) fail(field, 'must be a non-empty string');
  // every token is presented in a Hello (SDKs the app token, dashboards theirs or the admin one)
  if (v.length > MAX_NAME_LENGTH)
    fail(field, `must be at most ${MAX_NAME_LENGTH} characters (the longest a Hello carries)`);
  return v;
}

/**
 * Validates a parsed config object; throws ValidationError (HK_ERR_CONFIG) naming the field.
 * @param baseDir where relative file paths inside (`notify[].ca`) start @default process.cwd()
 * @param env where HOTKEY_KEY_SECRET is read when the config has no `keySecret` @default process.env
 */
export function parseHubConfig(
  input: unknown,
  baseDir?: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): HubConfig {
  if (!isPlainObject(input)) fail('config', 'must be a JSON object');
  for (const name of Object.keys(input)) if (!TOP_LEVEL.has(name)) fail(name, 'unknown field');
  const appsIn = input.apps;
  if (!isPlainObject(appsIn)) fail('apps', 'must be an object of app name to { token, rules }');
  const apps: Record<string, AppConfig> = Object.create(null);
  for (const [name, raw] of Object.entries(appsIn)) {
    const field = `apps.${name}`;
    if (!isValidAppName(name)) fail(field, `app name must be 1 to ${MAX_NAME_LENGTH} printable characters`);
    if (!isPlainObject(raw)) fail(field, 'must be an object');
    for (const k of Object.keys(raw)) if (!APP_FIELDS.has(k)) fail(`${field}.${k}`, 'unknown field');
    let rules: Rule[] = [];
    if (raw.rules !== undefined) {
      try {
        rules = parseRules(raw.rules, `${field}.rules`);
      } catch (err) {
        if (err instanceof ValidationError) fail(err.field, err.message.slice(err.field.length + 2));
        throw err;
      }
    }
    const app: AppConfig = { rules };
    const t = token(raw.token, `${field}.token`);
    if (t !== undefined) app.token = t;
    if (raw.keys !== undefined) {
      if (typeof raw.keys !== 'string' || !(KEY_MODES as readonly string[]).includes(raw.keys))
        fail(`${field}.keys`, `must be one of ${KEY_MODES.map((m) => `"${m}"`).join(', ')}`);
      app.keys = raw.keys as KeyMode;
    }
    if (raw.keepPrefix !== undefined) app.keepPrefix = keepPrefix(raw.keepPrefix, `${field}.keepPrefix`);
    apps[name] = app;
  }
  const config: HubConfig = { apps };
  const admin = token(input.adminToken, 'adminToken');
  if (admin !== undefined) config.adminToken = admin;
  const dashboard = token(input.dashboardToken, 'dashboardToken');
  if (dashboard !== undefined) config.dashboardToken = dashboard;
  if (input.tls !== undefined) {
    const tls = input.tls;
    if (!isPlainObject(tls)) fail('tls', 'must be { "cert": "file.pem", "key": "file.pem" }');
    for (const k of Object.keys(tls)) if (k !== 'cert' && k !== 'key') fail(`tls.${k}`, 'unknown field');
    for (const k of ['cert', 'key'] as const)
      if (typeof tls[k] !== 'string' || tls[k] === '') fail(`tls.${k}`, 'must be the path of a PEM file');
    config.tls = { cert: tls.cert as string, key: tls.key as string };
  }
  if (input.allowedOrigins !== undefined) config.allowedOrigins = parseOrigins(input.allowedOrigins, 'allowedOrigins');
  if (input.notify !== undefined) config.notify = parseNotify(input.notify, 'notify', baseDir);
  const secretField = input.keySecret !== undefined ? 'keySecret' : 'HOTKEY_KEY_SECRET';
  const secret = input.keySecret ?? (env.HOTKEY_KEY_SECRET === '' ? undefined : env.HOTKEY_KEY_SECRET);
  if (secret !== undefined) {
    if (typeof secret !== 'string' || secret.length < MIN_KEY_SECRET)
      fail(secretField, `must be a string of at least ${MIN_KEY_SECRET} characters (e.g. 32 random hex digits)`);
    config.keySecret = secret;
  }
  const hashing = Object.keys(apps).find((name) => apps[name]?.keys === 'hash');
  if (hashing !== undefined && config.keySecret === undefined)
    fail(
      'keySecret',
      `is required: apps.${hashing}.keys is "hash" (set "keySecret" in the config or env HOTKEY_KEY_SECRET)`,
    );
  return config;
}

function keepPrefix(input: unknown, field: string): string[] {
  if (!Array.isArray(input) || input.length > MAX_KEEP_PREFIXES)
    fail(field, `must be an array of at most ${MAX_KEEP_PREFIXES} prefixes like ["session:"]`);
  return input.map((v, i) => {
    if (typeof v !== 'string' || v.length === 0 || v.length > MAX_NAME_LENGTH)
      fail(`${field}[${i}]`, `must be a non-empty string of at most ${MAX_NAME_LENGTH} characters`);
    return v;
  });
}

/** `*` or `scheme://host[:port]` origins (a browser's Origin header never has a path); throws HK_ERR_CONFIG. */
export function parseOrigins(input: unknown, field: string): string[] {
  if (!Array.isArray(input)) fail(field, 'must be an array of origins like "https://ops.example.com" or "*"');
  return input.map((v, i) => {
    if (typeof v !== 'string' || !(v === '*' || /^https?:\/\/[^/\s]+$/i.test(v)))
      fail(`${field}[${i}]`, 'must be "*" or an origin like "https://ops.example.com" (scheme and host, no path)');
    return v;
  });
}

/** Reads and validates a config file; unreadable files and bad JSON are HK_ERR_CONFIG too. */
export async function loadHubConfig(path: string): Promise<HubConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    fail('config', `cannot read ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    fail('config', `${path} is not valid JSON: ${(err as Error).message}`);
  }
  const config = parseHubConfig(parsed, dirname(path));
  if (config.tls !== undefined)
    config.tls = { cert: resolve(dirname(path), config.tls.cert), key: resolve(dirname(path), config.tls.key) };
  return config;
}
