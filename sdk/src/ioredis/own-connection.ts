/**
 * What the ioredis adapter sends on its own: commands past the hook on the user's connection
 * (counted by nobody, watched by nobody: folds, replica copies, PTTLs), refused once the user's
 * client is closing, and connections of its own to a node for tracking.
 */
import type { Cluster, Redis } from 'ioredis';
import { dispatched, type Client, type CmdCtor, type Send } from './cmd.ts';
import { isClosing } from './unhooked.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import { connectionName, type TrackingRole } from '../redis/tracking-session.ts';

/**
 * A sender of the adapter's own commands on `client`'s connection, past the hook (`down`): built
 * with ioredis's Command class once one command passed the hook (`ctor`; ioredis is not imported).
 */
export function ownSender(
  client: Client,
  down: Send,
  ctor: () => CmdCtor | undefined,
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
 * TLS, sentinels): RESP2, no key prefix, no offline queue (a load on a connection that is down
 * fails at once and the read goes to the user's client), reconnecting with a capped backoff.
 */
export function connectionTo(
  client: Client,
  base: Record<string | symbol, unknown>,
  nodeKey: string,
  role: TrackingRole,
): Redis | undefined {
  const overrides = {
    protocol: 2,
    // RESP3-only reply shapes (ioredis 6's replyMapping 'resp3') are refused with RESP2: ours reads plain replies
    replyMapping: undefined,
    keyPrefix: undefined,
    lazyConnect: false,
    enableOfflineQueue: false,
    enableAutoPipelining: false,
    autoResubscribe: false,
    autoResendUnfulfilledCommands: false,
    readOnly: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (times: number) => Math.min(50 * times, 1000),
    connectionName: connectionName(role),
  };
  if ((client as Partial<Cluster>).isCluster !== true) {
    return (base.duplicate as (o: object) => Redis).call(client, { ...overrides, monitor: false });
  }
  const node = (client as Cluster).nodes('master').find((n) => `${n.options.host}:${n.options.port}` === nodeKey);
  return node?.duplicate(overrides as never);
}
