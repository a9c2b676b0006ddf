/**
 * The config file's `notify` list: webhooks that hear of promotions, demotions, invalidations and
 * fenced instances without polling.
 *
 *   "notify": [{ "url": "https://chat.example.com/hook", "events": ["promote", "fenced"],
 *                "apps": ["shop"], "secret": "…", "ca": "chat-ca.pem" }]
 *
 * Validation names the field (`notify[0].events[1]`) like the rest of the config; `ca` is read
 * here (relative paths from the config file's folder), so a missing or non-PEM file is a config
 * error at start or reload rather than a failure of every delivery later.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ErrorCode, ValidationError } from '@hotkey/sdk';

/** What a target may subscribe to; `fenced` is an invalidation whose ack fenced an instance. */
export const NOTIFY_EVENTS = ['promote', 'demote', 'invalidate', 'fenced'] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

/** one home for the target defaults */
export const NOTIFY_DEFAULTS = Object.freeze({ timeoutMs: 5000, retries: 5, maxQueue: 1000 });
/** at most this many targets: each has its own queue */
export const MAX_NOTIFY_TARGETS = 32;

export interface NotifyTarget {
  /** http:// or https:// URL the events are POSTed to */
  url: string;
  /** the events sent */
  events: NotifyEvent[];
  /** only these apps' events; undefined: every app */
  apps?: string[];
  /** HMAC-SHA256 key of the `x-hotkey-signature` header; undefined: unsigned */
  secret?: string;
  /** the `ca` file as given (a path), for display */
  ca?: string;
  /** its PEM contents: the CA trusted for the receiver's certificate instead of the system CAs */
  caPem?: Buffer;
  /** one attempt's deadline @default 5000 */
  timeoutMs: number;
  /** attempts after the first, with exponential backoff @default 5 */
  retries: number;
  /** events waiting for this target; past it new ones are dropped and counted @default 1000 */
  maxQueue: number;
}

const FIELDS = new Set(['url', 'events', 'apps', 'secret', 'ca', 'timeoutMs', 'retries', 'maxQueue']);

function fail(field: string, message: string): never {
  throw new ValidationError(ErrorCode.Config, field, message);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function int(v: unknown, field: string, min: number, max: number, fallback: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    fail(field, `must be an integer from ${min} to ${max}`);
  return v;
}

function strings(v: unknown, field: string): string[] {
  if (!Array.isArray(v) || v.length === 0) fail(field, 'must be a non-empty array of strings');
  return v.map((s, i) => {
    if (typeof s !== 'string' || s.length === 0) fail(`${field}[${i}]`, 'must be a non-empty string');
    return s;
  });
}

/**
 * Validates the `notify` list; throws ValidationError (HK_ERR_CONFIG) naming the field.
 * @param baseDir where a relative `ca` path starts @default process.cwd()
 */
export function parseNotify(input: unknown, field = 'notify', baseDir = process.cwd()): NotifyTarget[] {
  if (!Array.isArray(input)) fail(field, 'must be an array of { url, events, apps?, secret?, ca? }');
  if (input.length > MAX_NOTIFY_TARGETS) fail(field, `at most ${MAX_NOTIFY_TARGETS} targets`);
  return input.map((raw, i) => parseTarget(raw, `${field}[${i}]`, baseDir));
}

function parseTarget(raw: unknown, field: string, baseDir: string): NotifyTarget {
  if (!isPlainObject(raw)) fail(field, 'must be an object { url, events, apps?, secret?, ca? }');
  for (const k of Object.keys(raw)) if (!FIELDS.has(k)) fail(`${field}.${k}`, 'unknown field');
  const url = raw.url;
  if (typeof url !== 'string') fail(`${field}.url`, 'must be an http:// or https:// URL');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    fail(`${field}.url`, 'must be an http:// or https:// URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    fail(`${field}.url`, `must be an http:// or https:// URL, got ${parsed.protocol}`);
  if (parsed.username !== '' || parsed.password !== '')
    fail(`${field}.url`, 'must not carry credentials (use "secret" to sign the body)');
  const events = strings(raw.events, `${field}.events`).map((e, j) => {
    if (!(NOTIFY_EVENTS as readonly string[]).includes(e))
      fail(`${field}.events[${j}]`, `unknown event "${e}": one of ${NOTIFY_EVENTS.join(', ')}`);
    return e as NotifyEvent;
  });
  const target: NotifyTarget = {
    url,
    events: [...new Set(events)],
    timeoutMs: int(raw.timeoutMs, `${field}.timeoutMs`, 100, 60_000, NOTIFY_DEFAULTS.timeoutMs),
    retries: int(raw.retries, `${field}.retries`, 0, 20, NOTIFY_DEFAULTS.retries),
    maxQueue: int(raw.maxQueue, `${field}.maxQueue`, 1, 100_000, NOTIFY_DEFAULTS.maxQueue),
  };
  if (raw.apps !== undefined) target.apps = strings(raw.apps, `${field}.apps`);
  if (raw.secret !== undefined) {
    if (typeof raw.secret !== 'string' || raw.secret.length === 0 || raw.secret.length > 4096)
      fail(`${field}.secret`, 'must be a string of 1 to 4096 characters');
    target.secret = raw.secret;
  }
  if (raw.ca !== undefined) {
    if (typeof raw.ca !== 'string' || raw.ca.length === 0) fail(`${field}.ca`, 'must be the path of a PEM file');
    if (parsed.protocol !== 'https:') fail(`${field}.ca`, 'only applies to an https:// url');
    const path = resolve(baseDir, raw.ca);
    let pem: Buffer;
    try {
      pem = readFileSync(path);
    } catch (err) {
      fail(`${field}.ca`, `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    try {
      new X509Certificate(pem);
    } catch (err) {
      fail(`${field}.ca`, `not a PEM certificate: ${(err as Error).message}`);
    }
    target.ca = raw.ca;
    target.caPem = pem;
  }
  return target;
}
