/**
 * What Redis server-assisted tracking (tracking.ts) is made of, apart from how it runs: a node's
 * session, a tracked read, the connections it drives and its options. Apart so that the per-node
 * state (node-tracker.ts) and the per-client one (tracking.ts) share them without importing each
 * other.
 */
import { MAX_KEY_LENGTH } from '../../wire/protocol.ts';

export const CHANNEL = '__redis__:invalidate';

/**
 * ms after a node's connections were opened during which a hot load waits for its first session
 * (a tracked load is cached, an untracked one is not); readers of the key share that one load
 * meanwhile. A bound in total, not per load: connections not up by then (an unreachable node, a
 * refused CLIENT TRACKING) cost later loads no wait. Each untracked load is a GET per read of a hot
 * key, so the wait covers a busy process: many instances opening theirs at one surge's first
 * read on a loaded machine can take hundreds of ms, and a shorter bound sends most of that
 * surge's reads to Redis.
 */
export const TRACKING_WAIT_MS = 1000;

/** prefixes one wrapped client may have Redis track by broadcast at most */
export const MAX_TRACKED_PREFIXES = 64;

/** A node's tracking state: values loaded under it are served while `live`. */
export interface TrackingSession {
  live: boolean;
}
/** The session of a value read without tracking: served to its own load's caller, never from the cache. */
export const UNTRACKED: TrackingSession = Object.freeze({ live: false }) as TrackingSession;

export interface TrackedRead {
  value: unknown;
  pttl: unknown;
  session: TrackingSession;
}

export interface TrackingOptions {
  /** heartbeat PING period on the connections of a node @default 1000 */
  pingMs?: number;
  /** a node whose connections answered no PING for this long loses its session @default 3000 */
  deadMs?: number;
  /** hears connection faults (they never reach the caller) @default ignore */
  onError?: (error: Error) => void;
  /**
   * Key prefixes (as Redis names the keys: after an ioredis `keyPrefix`) that Redis tracks by
   * broadcast (`CLIENT TRACKING … BCAST PREFIX`), so that a write of any key under them is heard
   * from before its first read: a key under them that surges here is loaded from its first
   * read's reply (redis/read/hot-read.ts, client/read/recent-reads.ts), one GET per instance, not two.
   * Costs no Redis tracking-table items, but one invalidation message per write of a key under
   * a prefix to every instance, read or not (`''` tracks every key: every write). The wrapped
   * client then opens its tracking connections when it is ready, not at its first read, so that
   * a surge's first read is covered. At most 64 (MAX_TRACKED_PREFIXES); a prefix inside another
   * is covered by it and dropped @default [] (none)
   */
  prefixes?: readonly string[];
}

/** The options of tracking with every default filled in and the prefixes checked. */
export interface ResolvedTrackingOptions {
  pingMs: number;
  deadMs: number;
  onError: (error: Error) => void;
  /** no prefix inside another (Redis refuses overlapping prefixes on one connection) */
  prefixes: readonly string[];
}

export function resolveTrackingOptions(options: TrackingOptions): ResolvedTrackingOptions {
  return {
    pingMs: options.pingMs ?? 1000,
    deadMs: options.deadMs ?? 3000,
    onError: options.onError ?? (() => {}),
    prefixes: trackedPrefixes(options.prefixes),
  };
}

/**
 * `tracking.prefixes` checked: an array of at most MAX_TRACKED_PREFIXES strings of at most
 * MAX_KEY_LENGTH characters; returned without duplicates and without prefixes another one
 * covers (`item:` covers `item:flash:`): Redis refuses a connection prefixes that overlap.
 */
export function trackedPrefixes(value: unknown): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value))
    throw new TypeError(`withHotKeys: tracking.prefixes must be an array of strings, got ${describe(value)}`);
  if (value.length > MAX_TRACKED_PREFIXES)
    throw new TypeError(
      `withHotKeys: tracking.prefixes holds ${value.length} prefixes, more than ${MAX_TRACKED_PREFIXES}`,
    );
  for (const p of value) {
    if (typeof p !== 'string')
      throw new TypeError(`withHotKeys: tracking.prefixes must hold strings only, got ${describe(p)}`);
    if (p.length > MAX_KEY_LENGTH)
      throw new TypeError(`withHotKeys: a tracking prefix is ${p.length} characters, more than ${MAX_KEY_LENGTH}`);
  }
  const kept: string[] = [];
  for (const p of [...new Set(value as string[])].sort((a, b) => a.length - b.length))
    if (!kept.some((q) => p.startsWith(q))) kept.push(p);
  return Object.freeze(kept);
}

function describe(v: unknown): string {
  return Array.isArray(v) ? 'an array' : v === null ? 'null' : typeof v === 'string' ? JSON.stringify(v) : typeof v;
}

/**
 * A connection of our own to one node (no key prefix, no offline queue), as tracking drives it;
 * each adapter makes its own over its client's connections. Events: 'ready', 'close', 'end' (it
 * gave up reconnecting: none comes again), 'error', and 'messageBuffer' (channel and payload of a
 * message on a subscribed channel; the payload is the array of keys, or null for a flush).
 */
export interface TrackingConnection {
  readonly status: string;
  on(event: 'ready' | 'close' | 'end', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'messageBuffer', listener: (channel: Buffer, payload: unknown) => void): unknown;
  /** `CLIENT ID` (a number) or `CLIENT TRACKING …` */
  client(...args: string[]): Promise<unknown>;
  subscribe(channel: string): Promise<unknown>;
  /** MULTI … EXEC of `commands`: each reply as `[error, value]`, null when the transaction was discarded */
  multi(commands: string[][]): { exec(): Promise<Array<[Error | null, unknown]> | null> };
  ping(): Promise<unknown>;
  /** closes it; `reconnect`: drops the socket and connects again */
  disconnect(reconnect?: boolean): void;
}

/**
 * The roles of a node's connections: `reader` (OPTIN tracking, the hot loads), `sub` (the
 * invalidation channel) and, with `prefixes`, `watch` (BCAST tracking of them; it sends nothing else).
 */
export type TrackingRole = 'reader' | 'sub' | 'watch';

/** The `CLIENT SETNAME` of a connection in `role` (what `CLIENT LIST` shows an operator). */
export function connectionName(role: TrackingRole): string {
  return role === 'reader' ? 'hotkey-tracking' : role === 'sub' ? 'hotkey-invalidations' : 'hotkey-watch';
}
