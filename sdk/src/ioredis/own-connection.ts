/**
 * What the ioredis adapter sends on its own: commands past the hook on the user's connection
 * (counted by nobody, watched by nobody: folds, replica copies, PTTLs), refused once the user's
 * client is closing, and connections of its own to a node for tracking (tracking-connection.ts).
 */
import type { Cluster, Redis } from 'ioredis';
import { dispatched, type Client, type RedisCommandCtor, type Send } from './command.ts';
import { isClosing } from './unhooked.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import { connectionName, type TrackingRole } from '../redis/tracking/tracking-session.ts';
import { IoredisTrackingConnection } from './tracking-connection.ts';

/**
 * A sender of the adapter's own commands on `client`'s connection, past the hook (`down`): built
 * with ioredis's Command class once one command passed the hook (`ctor`; ioredis is not imported).
 */
export function ownSender(
  client: Client,
  down: Send,
  ctor: () => RedisCommandCtor | undefined,
): (name: string, args: unknown[], replyEncoding: string | null) => Promise<unknown> {
  return (name, args, replyEncoding) => {
    // the user's client is closing (QUIT sent) or closed: a late write of ours would hit a closing socket (EPIPE)
    if (isClosing(client))
      return Promise.reject(new HotKeyError(ErrorCode.Closed, `${name}: the Redis client is closing`));
    const command = new (ctor()!)(name, args, { replyEncoding });
    dispatched.add(command);
    void down.call(client, command);
    return command.promise;
  };
}

/**
 * A connection of our own to a node, for tracking (unwrapped, with the client's options: auth,
 * TLS, sentinels), kept out of ioredis's diagnostics channels (tracking-connection.ts): no key
 * prefix, no offline queue (a load on a connection that is down fails at once and the read goes
 * to the user's client). `sub`, the invalidation channel's, speaks RESP2: a RESP3 redirect target
 * gets `invalidate` push frames, which ioredis drops. The others speak the client's protocol, so
 * they greet and authenticate as the client does (HELLO 3 AUTH for RESP3, AUTH for RESP2).
 *
 * It reconnects, with a capped backoff, only while the user's client is ready: a server the
 * client cannot reach is not called by ours either (a dead node, a port another server takes
 * over later). Given up, it ends; tracking opens new ones when the client is ready again.
 */
export function connectionTo(
  client: Client,
  base: Record<string | symbol, unknown>,
  nodeKey: string,
  role: TrackingRole,
): IoredisTrackingConnection | undefined {
  const overrides = {
    ...(role === 'sub' ? { protocol: 2 } : {}),
    // RESP3-only reply shapes (ioredis 6's replyMapping 'resp3'): ours reads plain replies
    replyMapping: undefined,
    keyPrefix: undefined,
    lazyConnect: true, // connected by IoredisTrackingConnection, once it is out of the channels
    enableOfflineQueue: false,
    enableAutoPipelining: false,
    autoResubscribe: false,
    autoResendUnfulfilledCommands: false,
    readOnly: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (times: number) => (client.status === 'ready' ? Math.min(50 * times, 1000) : null),
    connectionName: connectionName(role),
  };
  let redis: Redis | undefined;
  if ((client as Partial<Cluster>).isCluster !== true) {
    redis = (base.duplicate as (o: object) => Redis).call(client, { ...overrides, monitor: false });
  } else {
    const node = (client as Cluster).nodes('master').find((n) => `${n.options.host}:${n.options.port}` === nodeKey);
    redis = node?.duplicate(overrides as never);
  }
  return redis === undefined ? undefined : new IoredisTrackingConnection(redis);
}
