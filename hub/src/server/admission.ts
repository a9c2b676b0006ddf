/**
 * Admission: what a connection may cost the hub before it has shown who it is.
 *
 * A stranger's connection is cheap to open and must stay cheap to hold. Three gates, outermost
 * first:
 *
 * - HTTP (`guardHttpServer`): node:http timeouts for headers, whole requests and idle keep-alive,
 *   a ceiling on connections below the open-file limit, and at most `maxPendingConnections`
 *   connections that have not completed their first request. Past that the *oldest* such
 *   connection is closed, not the new one: a slowloris that holds thousands of half-sent requests
 *   only pushes out its own, and an SDK that sends its upgrade request in a few milliseconds gets
 *   in (refusing the newcomer, as `server.maxConnections` alone does, would lock SDKs out). The
 *   oldest is spared while younger than MIN_PENDING_AGE_MS, up to twice the cap.
 * - Origin (`OriginPolicy`): browsers always send `Origin` on a WebSocket handshake, Node SDKs
 *   never do. `/ws` refuses any browser origin not allow-listed; `/live` also admits the hub's own
 *   page (Origin host equal to the Host header). Refused with HTTP 403 before the upgrade.
 * - Before Hello (`HandshakePool` and the byte budget in socket-server.ts): at most
 *   `maxUnauthenticatedSockets` WebSockets without an accepted Hello (`maxUnauthenticatedPerAddress`
 *   per remote address), oldest closed first with 4009 (spared while younger than
 *   MIN_PENDING_AGE_MS, up to twice the cap), and each may send `preHelloBytes` before
 *   its Hello is accepted (close 4004 past it). ws has one `maxPayload` per server and no
 *   documented way to change it on an open socket (websockets/ws#1473 was declined), so the budget
 *   is counted on the raw socket's reads: ws buffers at most the budget plus one read chunk.
 *
 * Memory before authentication is then bounded by counts times budgets, whatever the peers send.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { HubTunables } from '../core/tunables.ts';

/** descriptors kept free for Redis, files and the runtime when the connection cap is derived */
const RESERVED_FDS = 128;
/**
 * A waiting connection younger than this is closed to make room only past twice the cap: node
 * accepts connections in batches before reading any of them, so the oldest of a batch may simply
 * not have been read yet. A slowloris holds its connections for seconds and is past this age.
 */
export const MIN_PENDING_AGE_MS = 1000;

/** This process's soft open-file limit (Linux `/proc/self/limits`), or undefined elsewhere. */
export function openFileLimit(): number | undefined {
  try {
    const match = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return match === null ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}

/** The connection ceiling: the tunable, or the open-file limit minus a reserve when it is 0. */
export function connectionCap(t: Pick<HubTunables, 'maxConnections'>, fdLimit = openFileLimit()): number {
  if (t.maxConnections > 0) return t.maxConnections;
  return fdLimit === undefined ? Infinity : Math.max(64, fdLimit - RESERVED_FDS);
}

/** createServer options that must be set at construction (the timeout sweep's period). */
export function httpServerOptions(t: Pick<HubTunables, 'headersTimeoutMs'>): ServerOptions {
  // node:http checks headersTimeout / requestTimeout on this period (default 30 s, which would let
  // half-open requests live 30 s past their deadline)
  return { connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(t.headersTimeoutMs / 4))) };
}

export interface HttpGuardStats {
  /** connections without a complete first request now */
  pending: number;
  /** such connections closed to make room for newer ones */
  evicted: number;
  /** the connection ceiling in force */
  maxConnections: number;
}

/** Timeouts, the connection ceiling and the pending-request cap on a hub's HTTP server. */
export function guardHttpServer(server: Server, t: HubTunables): () => HttpGuardStats {
  server.headersTimeout = t.headersTimeoutMs;
  server.requestTimeout = Math.max(t.requestTimeoutMs, t.headersTimeoutMs);
  server.keepAliveTimeout = t.keepAliveTimeoutMs;
  const maxConnections = connectionCap(t);
  if (Number.isFinite(maxConnections)) server.maxConnections = maxConnections;
  // pending connections may reach twice this in a burst: at most half the ceiling, never all of it
  const maxPending = Math.max(1, Math.min(t.maxPendingConnections, Math.floor(maxConnections / 4)));
  const pending = new Map<Socket, number>(); // socket -> accepted at; insertion order: oldest first
  let evicted = 0;
  server.on('connection', (socket: Socket) => {
    const now = performance.now();
    pending.set(socket, now);
    socket.once('close', () => pending.delete(socket));
    // over the cap, the oldest goes once it has had its chance to be read; over twice the cap,
    // whatever its age (a burst of fresh connections)
    while (pending.size > maxPending) {
      const [oldest, since] = pending.entries().next().value as [Socket, number];
      if (pending.size <= 2 * maxPending && now - since < MIN_PENDING_AGE_MS) break;
      pending.delete(oldest);
      evicted++;
      oldest.destroy();
    }
  });
  const started = (req: IncomingMessage) => pending.delete(req.socket);
  server.on('request', started);
  server.on('upgrade', started);
  return () => ({ pending: pending.size, evicted, maxConnections });
}

/**
 * Which browser origins may open a WebSocket. Entries are origins (`scheme://host[:port]`,
 * compared case-insensitively without a trailing slash) or `*`.
 */
export class OriginPolicy {
  readonly #allowed: ReadonlySet<string>;
  readonly #any: boolean;

  constructor(allowed: readonly string[] = []) {
    this.#allowed = new Set(allowed.map(normalizeOrigin));
    this.#any = this.#allowed.has('*');
  }

  /**
   * True when a handshake may proceed. No Origin (a non-browser client) is always allowed; the
   * hub's own origin only when `sameOriginAllowed` (the live feed of the hub's own page).
   */
  allows(origin: string | undefined, host: string | undefined, sameOriginAllowed: boolean): boolean {
    if (origin === undefined) return true;
    if (this.#any || this.#allowed.has(normalizeOrigin(origin))) return true;
    return sameOriginAllowed && host !== undefined && originHost(origin) === host.toLowerCase();
  }
}

function normalizeOrigin(origin: string): string {
  return origin.trim().replace(/\/+$/, '').toLowerCase();
}

/** `host[:port]` of an origin as a Host header spells it (default ports omitted), or undefined. */
function originHost(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.host.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Connections admitted but not yet authenticated, oldest first, with a hub-wide and a per-address
 * cap.
 */
export class HandshakePool<T> {
  readonly #max: number;
  readonly #maxPerAddress: number;
  readonly #all = new Map<T, { address: string; since: number }>(); // insertion order: oldest first
  readonly #byAddress = new Map<string, Set<T>>();

  constructor(max: number, maxPerAddress: number) {
    this.#max = max;
    this.#maxPerAddress = maxPerAddress;
  }

  get size(): number {
    return this.#all.size;
  }

  /**
   * Adds `item`; returns the entries to close to keep both caps, oldest first (one younger than
   * MIN_PENDING_AGE_MS is spared until its pool holds twice its cap).
   */
  enter(item: T, address: string, now = performance.now()): T[] {
    this.#all.set(item, { address, since: now });
    let mine = this.#byAddress.get(address);
    if (mine === undefined) this.#byAddress.set(address, (mine = new Set()));
    mine.add(item);
    const out: T[] = [];
    const trim = (pool: { size: number; keys(): IterableIterator<T> }, cap: number) => {
      while (pool.size > cap) {
        const oldest = pool.keys().next().value as T;
        if (pool.size <= 2 * cap && now - this.#all.get(oldest)!.since < MIN_PENDING_AGE_MS) return;
        this.leave(oldest);
        out.push(oldest);
      }
    };
    trim(mine, this.#maxPerAddress);
    trim(this.#all, this.#max);
    return out;
  }

  /** The entry authenticated or closed (idempotent). */
  leave(item: T): void {
    const address = this.#all.get(item)?.address;
    if (address === undefined) return;
    this.#all.delete(item);
    const mine = this.#byAddress.get(address);
    mine?.delete(item);
    if (mine?.size === 0) this.#byAddress.delete(address);
  }

  has(item: T): boolean {
    return this.#all.has(item);
  }
}
