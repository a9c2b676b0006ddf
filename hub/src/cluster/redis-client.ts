/**
 * The ioredis adapter: how the hub opens its Redis connections. Only the `redis-*.ts` modules of
 * the hub touch ioredis, and they get their clients here so that every connection fails fast and
 * heals by itself in the same way:
 *
 * - no offline queue: a command issued while Redis is down rejects at once instead of piling up
 *   (unbounded memory) and being replayed later (double-counted history);
 * - no resending of in-flight commands after a reconnect, for the same reason;
 * - a command timeout, so a stalled Redis cannot hang a heartbeat;
 * - reconnects forever with a capped backoff: a hub never gives up on its Redis.
 *
 * The subscriber connection is the exception for its single SUBSCRIBE: it is queued until the
 * first connect (one command, bounded) and re-issued by ioredis after each reconnect.
 */
import type { ConnectionOptions } from 'node:tls';
import { Redis, type RedisOptions } from 'ioredis';

export type { Redis };

export interface RedisClientOptions {
  /** `redis://host:port[/db]`, or `rediss://` for TLS */
  url: string;
  /** TLS options for a `rediss://` URL (e.g. `{ ca }` for a private CA); ignored for `redis://` @default {} (the system CAs) */
  tls?: ConnectionOptions;
  /** shown in `CLIENT LIST` */
  name: string;
  /** upper bound of the reconnect backoff @default 1000 */
  maxBackoffMs?: number;
  /** a command without reply after this long fails @default 1000 */
  commandTimeoutMs?: number;
  /** TCP connect deadline @default 2000 */
  connectTimeoutMs?: number;
  /** a connection for SUBSCRIBE only @default false */
  subscriber?: boolean;
}

export function createRedisClient(opts: RedisClientOptions): Redis {
  const maxBackoffMs = opts.maxBackoffMs ?? 1000;
  const subscriber = opts.subscriber ?? false;
  const client = new Redis(opts.url, {
    ...redisTlsOptions(opts.url, opts.tls),
    lazyConnect: true,
    connectionName: opts.name,
    enableOfflineQueue: subscriber,
    // null: the subscriber's queued SUBSCRIBE waits for Redis however long it takes
    maxRetriesPerRequest: subscriber ? null : 1,
    autoResendUnfulfilledCommands: false,
    autoResubscribe: true,
    commandTimeout: subscriber ? undefined : (opts.commandTimeoutMs ?? 1000),
    connectTimeout: opts.connectTimeoutMs ?? 2000,
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 10), maxBackoffMs),
  });
  // Without a listener an 'error' event would crash the process; the owners watch the
  // connection state ('ready' / 'close') and log transitions, not every failed attempt.
  client.on('error', () => {});
  return client;
}

/**
 * ioredis's `tls` for a URL: TLS exactly for `rediss://`, verified against `tls.ca` (or the system
 * CAs) with the URL's host name as SNI and the name checked; nothing for `redis://`.
 */
export function redisTlsOptions(url: string, tls: ConnectionOptions = {}): Pick<RedisOptions, 'tls'> {
  if (!/^rediss:\/\//i.test(url)) return {};
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  // SNI takes host names only, not IP addresses
  const servername = /^[\d.]+$|:/.test(host) ? undefined : host;
  return { tls: { ...(servername === undefined ? {} : { servername }), ...tls } };
}

/** A Redis URL fit for logs: the password replaced by `***`. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

/** Starts connecting; failures are retried by the retry strategy, never thrown. */
export function connectInBackground(client: Redis): void {
  client.connect().catch(() => {});
}

export function isReady(client: Redis): boolean {
  return client.status === 'ready';
}
