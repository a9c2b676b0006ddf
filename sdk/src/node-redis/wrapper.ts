/**
 * node-redis adapter: `withHotKeys(client, hk)` hooks a node-redis client (`createClient`), a
 * Cluster (`createCluster`) or a pool (`createClientPool`, `client.createPool()`) in place and
 * returns it: hot GETs answered from hk's local cache, every write invalidated cluster-wide
 * before it settles, writes from anywhere heard through Redis tracking on connections of the
 * adapter's own. client-hook.ts is the hook on one `RedisClient`; this file finds the clients to
 * hook: the client itself, a Cluster's node clients (as its dispatch picks them: `_execute`
 * and the slot lookup that `execAsPipeline` uses), a pool's clients (as `execute` lends them).
 *
 * Refused with a TypeError, before anything is hooked: what is not a node-redis client, cluster
 * or pool; a client with node-redis's own `clientSideCache` (two caches of one key under two
 * invalidation schemes: its entries would be served with no acknowledged invalidation, the
 * guarantee this adapter gives; turn one of them off); one wrapped with another HotKeyClient.
 * Wrapping again with the same hk is a no-op. After `hk.close()` a wrapped client behaves as a
 * plain one (nothing is hot, so nothing is served locally; writes are not delayed).
 */
import type { HotKeyClient } from '../client/client.ts';
import type { TrackedClient } from '../redis/tracking/tracking.ts';
import { connectionName } from '../redis/tracking/tracking-session.ts';
import { NodeRedisConnection, ownOverrides, type NodeRedisLike } from './connection.ts';
import { createContext, type Context, type NodeRedisClient } from './context.ts';
import { HOOK, hookClient, hookOf } from './client-hook.ts';
import { clientDeployment, clusterDeploymentOf, optionsDb } from './deployment.ts';
import { resolveWrapOptions, type WithHotKeysOptions } from '../redis/wrap-options.ts';
import { ownSend } from './own-send.ts';
import { closeHooks } from './write-hot.ts';
import { clientReplicaNodes, clusterReplicaNodes } from './replica-nodes.ts';

export type { WithHotKeysOptions } from '../redis/wrap-options.ts';

type Proto = Record<string | symbol, unknown>;
type Fn = (...args: unknown[]) => unknown;

const PLAIN = /** a client of ours: no key prefix, no cache, RESP2 */ ownOverrides;

/** A node-redis Cluster as the adapter reads it (v5 and v6). */
interface NodeRedisCluster {
  readonly _self: NodeRedisCluster;
  readonly _options?: { rootNodes?: ReadonlyArray<{ url?: string; socket?: object }>; defaults?: object };
  readonly _slots: Record<string, unknown>;
  readonly isReady: boolean;
  readonly slots: ReadonlyArray<{ master?: { host: string; port: number } } | undefined>;
  readonly masters: ReadonlyArray<{ host: string; port: number; client?: unknown }>;
  readonly clientSideCache?: unknown;
  on(event: string, listener: () => void): unknown;
  once(event: string, listener: () => void): unknown;
}

function isObject(x: unknown): x is Record<string | symbol, unknown> {
  return typeof x === 'object' && x !== null;
}

function isNodeRedisClient(x: unknown): x is NodeRedisClient {
  return (
    isObject(x) &&
    isObject(x._self) &&
    typeof x.sendCommand === 'function' &&
    typeof x._executeMulti === 'function' &&
    typeof x._executePipeline === 'function' &&
    typeof x.duplicate === 'function'
  );
}

function isNodeRedisCluster(x: unknown): x is NodeRedisCluster {
  return isObject(x) && isObject(x._self) && typeof x._execute === 'function' && isObject(x._slots);
}

function isNodeRedisPool(x: unknown): x is { _self: object; execute: Fn } {
  return isObject(x) && isObject(x._self) && typeof x.execute === 'function' && typeof x.sendCommand === 'function';
}

/** The class's own method under any hook of ours (a duplicate of ours must not be wrapped). */
function plain(real: object, name: string): Fn {
  let proto = Object.getPrototypeOf(real) as Proto;
  if (Object.hasOwn(proto, HOOK)) proto = Object.getPrototypeOf(proto) as Proto;
  return proto[name] as Fn;
}

function refuseCache(cache: unknown): void {
  if (cache !== undefined && cache !== null)
    throw new TypeError(
      "withHotKeys: the node-redis client has clientSideCache on: turn it off (createClient without 'clientSideCache') or do not wrap it; two caches of one key would serve values without hotkey's acknowledged invalidation",
    );
}

/** Wrapped already: the same hk (true), or another (TypeError). */
function wrappedBy(real: object, hk: HotKeyClient): boolean {
  const ctx = hookOf(real);
  if (ctx === undefined) return false;
  if (ctx.hk === hk) return true;
  throw new TypeError('withHotKeys: client is already wrapped with another HotKeyClient');
}

/**
 * Hooks `client` (a node-redis client, Cluster or pool) in place and returns it. Throws
 * TypeError for anything else, for a client with `clientSideCache`, or one wrapped with another hk.
 */
export function withHotKeys<C extends object>(client: C, hk: HotKeyClient, options: WithHotKeysOptions = {}): C {
  if (isNodeRedisCluster(client)) return wrapCluster(client, hk, options) as C;
  if (isNodeRedisClient(client)) return wrapClient(client, hk, options) as C;
  if (isNodeRedisPool(client)) return wrapPool(client, hk, options) as C;
  throw new TypeError(
    'withHotKeys: client must be a node-redis client, cluster or pool (createClient, createCluster, createClientPool of redis / @redis/client v5 or v6)',
  );
}

function wrapClient(client: NodeRedisClient, hk: HotKeyClient, options: WithHotKeysOptions): NodeRedisClient {
  const real = client._self;
  if (wrappedBy(real, hk)) return client;
  refuseCache(real.clientSideCache);
  const resolved = resolveWrapOptions(options);
  if (!Object.isExtensible(real))
    throw new TypeError('withHotKeys: client is frozen, sealed or not extensible: its dispatch cannot be hooked');
  const duplicate = plain(real, 'duplicate');
  const tracked: TrackedClient = {
    get status() {
      return real.isReady ? 'ready' : 'connecting';
    },
    on: (event, listener) => real.on(event, listener),
    once: (event, listener) => real.once(event, listener),
  };
  const own = ownSend(real, false);
  const ctx = createContext({
    hk,
    client: real,
    options: resolved,
    isCluster: false,
    deployment: clientDeployment(real.options as never),
    tracked,
    connect: (_node, role) => connection(() => duplicate.call(real, PLAIN(real.options, connectionName(role)))),
    initialDb: (c) => optionsDb((c as NodeRedisClient).options),
    ownSend: own,
    replicaNodes: clientReplicaNodes(own),
  });
  hookClient(real, ctx, (copy) => withHotKeys(copy, hk, options));
  return client;
}

function connection(make: () => unknown): NodeRedisConnection {
  return new NodeRedisConnection(make as () => NodeRedisLike);
}

/** Hooks a node client of a Cluster or pool with their shared context (once). */
function hookMember(member: unknown, ctx: Context, hk: HotKeyClient, options: WithHotKeysOptions): void {
  if (!isNodeRedisClient(member)) return;
  const real = member._self;
  if (hookOf(real) !== undefined) return;
  hookClient(real, ctx, (copy) => withHotKeys(copy, hk, options));
}

function wrapCluster(cluster: NodeRedisCluster, hk: HotKeyClient, options: WithHotKeysOptions): NodeRedisCluster {
  const real = cluster._self;
  if (wrappedBy(real, hk)) return cluster;
  refuseCache(real.clientSideCache);
  const resolved = resolveWrapOptions(options);
  const deployment = clusterDeploymentOf(real._options);
  if (!Object.isExtensible(real) || !Object.isExtensible(real._slots))
    throw new TypeError('withHotKeys: cluster is frozen, sealed or not extensible: its dispatch cannot be hooked');
  const slotOwners = new Proxy([] as Array<readonly string[] | undefined>, {
    get(target, prop) {
      if (typeof prop !== 'string' || !/^\d+$/.test(prop)) return Reflect.get(target, prop);
      const master = real.slots[Number(prop)]?.master;
      return master === undefined ? undefined : [`${master.host}:${master.port}`];
    },
  });
  const tracked: TrackedClient = {
    isCluster: true,
    get status() {
      return real.isReady ? 'ready' : 'connecting';
    },
    on: (event, listener) => real.on(event === 'ready' ? 'connect' : 'disconnect', listener),
    once: (_event, listener) => real.once('disconnect', listener),
    slots: slotOwners,
    nodes: () => real.masters.map((m) => ({ options: { host: m.host, port: m.port } })),
  };
  const own = ownSend(real, true);
  const ctx = createContext({
    hk,
    client: real,
    options: resolved,
    isCluster: true,
    deployment,
    tracked,
    connect: (nodeKey, role) => {
      const master = real.masters.find((m) => `${m.host}:${m.port}` === nodeKey);
      const node = master?.client;
      if (!isNodeRedisClient(node)) return undefined; // not connected yet: tracking asks again at its next load
      const self = node._self;
      return connection(() => plain(self, 'duplicate').call(self, PLAIN(self.options, connectionName(role))));
    },
    initialDb: () => 0,
    ownSend: own,
    replicaNodes: clusterReplicaNodes(real, own),
  });
  const member = (client: unknown): unknown => {
    hookMember(client, ctx, hk, options);
    return client;
  };
  const base = Object.getPrototypeOf(real) as Proto;
  const execute = base._execute as Fn;
  const hooked = Object.create(base, {
    // every command, transaction and fan-out of the cluster runs `fn` on the node client it picked
    _execute: {
      value: function _execute(this: unknown, ...args: unknown[]): unknown {
        const fn = args[3] as Fn;
        if (typeof fn === 'function') args[3] = (client: unknown, ...rest: unknown[]) => fn(member(client), ...rest);
        return execute.apply(this, args);
      },
      writable: true,
      configurable: true,
    },
    duplicate: {
      value: function duplicate(this: unknown, ...args: unknown[]): unknown {
        return withHotKeys((base.duplicate as Fn).apply(this, args) as object, hk, options);
      },
      writable: true,
      configurable: true,
    },
    ...closeHooks(() => ctx.writeHot, base, true),
    [HOOK]: { value: ctx },
  }) as object;
  // execAsPipeline takes its node client from the slot lookup, past `_execute` (v6: getClientAndSlotNumber, v5: getClient)
  for (const name of ['getClientAndSlotNumber', 'getClient']) {
    const lookup = real._slots[name];
    if (typeof lookup !== 'function') continue;
    Object.defineProperty(real._slots, name, {
      value: function (this: unknown, ...args: unknown[]): unknown {
        const found = (lookup as Fn).apply(this, args);
        const hookFound = (r: unknown) => {
          member(isObject(r) && 'client' in r ? r.client : r);
          return r;
        };
        return found instanceof Promise ? found.then(hookFound) : hookFound(found);
      },
      writable: true,
      configurable: true,
    });
  }
  Object.setPrototypeOf(real, hooked);
  for (const m of real.masters) member(m.client);
  return cluster;
}

function wrapPool(pool: { _self: object; execute: Fn }, hk: HotKeyClient, options: WithHotKeysOptions): object {
  const real = pool._self as Record<string | symbol, unknown>;
  if (wrappedBy(real, hk)) return pool;
  refuseCache(real.clientSideCache);
  const resolved = resolveWrapOptions(options);
  /** made from the first client the pool lends: its options name the deployment */
  let ctx: Context | undefined;
  const contextFor = (first: NodeRedisClient): Context => {
    const self = first._self;
    const tracked: TrackedClient = {
      get status() {
        return self.isReady ? 'ready' : 'connecting';
      },
      on: (event, listener) => self.on(event, listener),
      once: (event, listener) => self.once(event, listener),
    };
    // the first client the pool lent, not the pool: a command of ours sent while a user's command
    // holds the pool's only free client would wait for it, and that command waits for ours
    const own = ownSend(self, false);
    return createContext({
      hk,
      client: self,
      options: resolved,
      isCluster: false,
      deployment: clientDeployment(self.options as never),
      tracked,
      connect: (_node, role) =>
        connection(() => plain(self, 'duplicate').call(self, PLAIN(self.options, connectionName(role)))),
      initialDb: (c) => optionsDb((c as NodeRedisClient).options),
      ownSend: own,
      replicaNodes: clientReplicaNodes(own),
    });
  };
  const base = Object.getPrototypeOf(real) as Proto;
  const execute = base.execute as Fn;
  const hooked = Object.create(base, {
    execute: {
      value: function (this: unknown, fn: Fn): unknown {
        const lent = (client: unknown, ...rest: unknown[]) => {
          if (isNodeRedisClient(client)) {
            ctx ??= contextFor(client);
            hookMember(client, ctx, hk, options);
          }
          return fn(client, ...rest);
        };
        const run = (task: Fn) => execute.call(this, task);
        // the breaker fails a task fast while the node is open, and times its wait for a client
        return ctx?.breaker === undefined ? run(lent) : ctx.breaker.poolTask(run, lent);
      },
      writable: true,
      configurable: true,
    },
    ...closeHooks(() => ctx?.writeHot, base, true),
    [HOOK]: { get: () => ctx ?? { hk } },
  }) as object;
  Object.setPrototypeOf(real, hooked);
  return pool;
}
