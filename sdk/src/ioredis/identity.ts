/**
 * Key identity: which Redis value a cached entry stands for. A cache shared by clients of two
 * servers, two databases or two key prefixes must never answer one with the other's value.
 *
 * - The key is what Redis sees: ioredis has already applied `keyPrefix` to the `Command`'s
 *   arguments, so the prefix is in the key itself (and the hub, the dashboard and events show the
 *   key as Redis stores it).
 * - The namespace is the deployment and the database: `host:port/db` (a unix socket path, a
 *   sentinel group name, or for a Cluster the sorted seed set, db always 0). A cached record
 *   carries the namespace it was read from, and a client of another namespace never uses it
 *   (it reads from its own Redis instead). Invalidations go by key, so a write in one namespace
 *   drops the key in every namespace: too much, never too little.
 */
import { MAX_KEY_LENGTH } from '../wire/protocol.ts';

interface StandaloneLike {
  options: { host?: string; port?: number; path?: string | null; db?: number; sentinels?: unknown; name?: string };
  condition?: { select?: number } | null;
}
interface ClusterLike {
  isCluster: true;
  startupNodes: ReadonlyArray<string | number | { host?: string; port?: number | string }>;
}

/** The deployment a client talks to, without the database (stable for a client's lifetime). */
export function deploymentOf(client: object): string {
  if ((client as Partial<ClusterLike>).isCluster === true) {
    const nodes = (client as Partial<ClusterLike>).startupNodes;
    // ioredis keeps them for the client's life; without them there is no deployment to key values by
    if (!Array.isArray(nodes) || nodes.length === 0)
      throw new TypeError(
        'withHotKeys: a Redis.Cluster without startup nodes cannot be wrapped (its deployment is unknown)',
      );
    const seeds = nodes.map((n) => (typeof n === 'object' ? `${n.host ?? '127.0.0.1'}:${n.port ?? 6379}` : String(n)));
    return `cluster(${[...new Set(seeds)].sort().join(',')})`;
  }
  const { options } = client as StandaloneLike;
  if (options.sentinels) return `sentinel(${options.name ?? 'mymaster'})`;
  if (options.path) return `unix(${options.path})`;
  return `${options.host ?? 'localhost'}:${options.port ?? 6379}`;
}

/** The database a standalone client's next command goes to (`SELECT` moves it). */
export function dbOf(client: object): number {
  const { condition, options } = client as StandaloneLike;
  return condition?.select ?? options.db ?? 0;
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
