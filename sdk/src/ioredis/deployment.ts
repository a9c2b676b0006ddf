/**
 * Key identity read from an ioredis client (redis/identity.ts says what it means): the deployment
 * from its options or a Cluster's startup nodes, the database from its last `SELECT`.
 */
import { clusterDeployment, standaloneDeployment } from '../redis/identity.ts';

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
    return clusterDeployment(
      nodes.map((n) => (typeof n === 'object' ? `${n.host ?? '127.0.0.1'}:${n.port ?? 6379}` : String(n))),
    );
  }
  const { options } = client as StandaloneLike;
  return standaloneDeployment({
    host: options.host,
    port: options.port,
    path: options.path,
    sentinelName: options.sentinels ? (options.name ?? 'mymaster') : undefined,
  });
}

/** The database a standalone client's next command goes to (`SELECT` moves it). */
export function dbOf(client: object): number {
  const { condition, options } = client as StandaloneLike;
  return condition?.select ?? options.db ?? 0;
}
