/**
 * Key identity read from a node-redis client (redis/identity.ts says what it means): the
 * deployment from its socket options (a `url` is parsed into them by node-redis), a Cluster's
 * from its root nodes; the database from its options, then from every `SELECT` it sends.
 */
import { clusterDeployment, standaloneDeployment } from '../redis/identity.ts';

interface SocketOptions {
  host?: string;
  port?: number | string;
  path?: string;
}

/** A standalone node-redis client's deployment. */
export function clientDeployment(options: { socket?: SocketOptions } | undefined): string {
  const socket = options?.socket ?? {};
  return standaloneDeployment({ host: socket.host, port: socket.port, path: socket.path });
}

/** A node-redis Cluster's deployment: its root nodes (`url` or `socket` each). */
export function clusterDeploymentOf(
  options: { rootNodes?: ReadonlyArray<{ url?: string; socket?: SocketOptions }> } | undefined,
): string {
  const roots = options?.rootNodes;
  if (!Array.isArray(roots) || roots.length === 0)
    throw new TypeError(
      'withHotKeys: a node-redis cluster without root nodes cannot be wrapped (its deployment is unknown)',
    );
  return clusterDeployment(
    roots.map((node) => {
      if (typeof node.url === 'string') {
        const url = new URL(node.url);
        return `${url.hostname || '127.0.0.1'}:${url.port || 6379}`;
      }
      return `${node.socket?.host ?? '127.0.0.1'}:${node.socket?.port ?? 6379}`;
    }),
  );
}

/** The database of a client's options (0 unless `database`, or a `url` path, names one). */
export function optionsDb(options: { database?: number } | undefined): number {
  return typeof options?.database === 'number' ? options.database : 0;
}
