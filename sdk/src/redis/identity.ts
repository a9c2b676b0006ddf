/**
 * Key identity: which Redis value a cached entry stands for. A cache shared by clients of two
 * servers, two databases or two key prefixes must never answer one with the other's value.
 *
 * - The key is what Redis sees: the client has already applied its key prefix (ioredis's
 *   `keyPrefix`, node-redis's `keyPrefix`) to the command's arguments, so the prefix is in the key
 *   itself (and the hub, the dashboard and events show the key as Redis stores it).
 * - The namespace is the deployment and the database: `host:port/db` (a unix socket path, a
 *   sentinel group name, or for a Cluster the sorted seed set, db always 0). A cached record
 *   carries the namespace it was read from, and a client of another namespace never uses it
 *   (it reads from its own Redis instead). Each adapter names its client's deployment the same
 *   way (`standaloneDeployment`, `clusterDeployment`), so an ioredis and a node-redis client of one server share entries. Invalidations go by key, so a write in one namespace
 *   drops the key in every namespace: too much, never too little.
 */
import { MAX_KEY_LENGTH } from '../wire/protocol.ts';

/** Where a client connects, as an adapter reads it from its client's options. */
export interface Endpoint {
  host?: string | undefined;
  port?: number | string | undefined;
  /** a unix socket */
  path?: string | null | undefined;
  /** a sentinel group's master name, when the client goes through sentinels */
  sentinelName?: string | undefined;
}

/** The deployment of a standalone client: `host:port`, `unix(path)` or `sentinel(name)`. */
export function standaloneDeployment(e: Endpoint): string {
  if (e.sentinelName !== undefined) return `sentinel(${e.sentinelName})`;
  if (e.path) return `unix(${e.path})`;
  return `${e.host ?? 'localhost'}:${e.port ?? 6379}`;
}

/** The deployment of a Cluster: its sorted, deduplicated seed set (what the client was given). */
export function clusterDeployment(seeds: readonly string[]): string {
  return `cluster(${[...new Set(seeds)].sort().join(',')})`;
}

/**
 * A Redis key as the hot-key client names it: the string itself, or a Buffer's UTF-8 text when
 * it round-trips (two different binary keys must never map to one name). Otherwise undefined:
 * the key is not cached locally (its reads go to Redis).
 */
export function keyName(arg: unknown): string | undefined {
  let key: string;
  if (typeof arg === 'string') key = arg;
  else if (Buffer.isBuffer(arg)) {
    key = arg.toString();
    if (Buffer.byteLength(key) !== arg.length || !Buffer.from(key).equals(arg)) return undefined;
  } else return undefined;
  return key.length > 0 && key.length <= MAX_KEY_LENGTH ? key : undefined;
}
