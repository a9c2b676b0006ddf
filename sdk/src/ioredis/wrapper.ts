/**
 * ioredis adapter: `withHotKeys(client, hk)` hooks a `Redis` or `Cluster` client's command
 * dispatch so that reads of hot keys are answered from hk's local cache and writes invalidate
 * the keys they wrote, cluster-wide. It returns the client itself.
 *
 * Design: every ioredis command — method or callback style, `call()`, `defineCommand` scripts,
 * the offline queue's replay, pipelines and MULTI at `exec()` — becomes a `Command` that passes
 * through `sendCommand(command, stream?, node?)`. The hook is that one method (with `duplicate`,
 * and GET's fast path for hot keys), on a prototype inserted between the client and its class
 * (`client → hooked → Redis.prototype`); `sendCommand` there is a data property whose value keeps
 * the hook above other patches of it in any order (layers.ts):
 * - nothing else changes, so built-ins, `instanceof`, `constructor`, `String()`, own-property
 *   enumeration, events and their `this`, `status`, options and chaining (`on()` returns the
 *   client) are the client's own, by construction;
 * - the instance gets no own property; a patch of `sendCommand` on the instance (before wrapping,
 *   or assigned after) or on `Redis.prototype` sits under the hook and sees what reaches Redis,
 *   never a loop (layers.ts says which order puts one above: one defined after, as sinon does);
 * - callback and promise styles share one path, and commands not answered locally are sent
 *   synchronously in call order, so replies keep plain ioredis's order;
 * - `showFriendlyErrorStack` frames are taken by ioredis before dispatch, in the caller's frame.
 *
 * What is answered locally: reads of one hot key (GET, HGET, HGETALL with a string reply
 * encoding) and GET's fast path, which builds no Command for a hit (hot-read.ts); the hot keys of
 * MGET / HMGET, Buffer replies (`getBuffer`, …) and reads inside a `pipeline()`, with only the
 * misses sent in one command (multi-read.ts). Concurrent reads of a hot key that is not cached
 * yet are merged into one load (hk's single-flight): the point of the product. Writes settle
 * after their invalidation (write-invalidation.ts); the adapter's own commands and connections
 * are own-connection.ts's. hook.ts is the dispatch (which of them a command goes to); this file
 * places it on the client.
 * Each command is counted once: the hook marks what it dispatched (command.ts), and ioredis
 * re-sending a command (offline queue, reconnect, NOSCRIPT) passes straight through.
 */
import type { HotKeyClient } from '../client/client.ts';
import type { Replicas, ReplicaStats } from '../redis/read/replicas.ts';
import type { SharedRecords } from '../redis/read/shared-records.ts';
import type { UpdateWrites } from '../redis/write/update-writes.ts';
import { resolveWrapOptions, type WithHotKeysOptions } from '../redis/wrap-options.ts';
import type { WriteHot } from '../redis/write/write-hot.ts';
import type { Breakers } from './breaker.ts';
import type { IoredisLike } from './client-shape.ts';
import type { Client } from './command.ts';
import { deploymentOf } from './deployment.ts';
import { IoredisHook } from './hook.ts';
import { isEnumerable, removeOwnSendCommand } from './layers.ts';
import { monitorFrom } from './monitor.ts';

export type { WithHotKeysOptions } from '../redis/wrap-options.ts';
export type { IoredisLike } from './client-shape.ts';

const replicaSets = new WeakMap<object, Replicas>();

/** What a wrapped client's replica keys did (redis/read/replicas.ts); undefined for a client without them. */
export function replicaStats(client: object): Readonly<ReplicaStats> | undefined {
  return replicaSets.get(client)?.stats;
}

const HOOK: unique symbol = Symbol('hotkey.ioredis');
/** the write-hot modes (redis/write/write-hot.ts) of a wrapped client, for `hotKeyStats` / `flushWrites` */
export const WRITE_HOT: unique symbol = Symbol('hotkey.writeHot');
/** the circuit breakers (breaker.ts) of a wrapped client, for `hotKeyStats` */
export const BREAKERS: unique symbol = Symbol('hotkey.breakers');
/** value push of a wrapped client (shared-records.ts, update-writes.ts), for `hotKeyStats` */
export const PUSHED: unique symbol = Symbol('hotkey.pushed');
interface Hooked {
  [HOOK]: HotKeyClient;
  [WRITE_HOT]: WriteHot;
  [BREAKERS]: Breakers | undefined;
  [PUSHED]: { shared: SharedRecords; updates: UpdateWrites | undefined };
}

/**
 * Hooks `client` (a `Redis` or a `Redis.Cluster` of ioredis, or of iovalkey) in place and returns
 * it: hot reads answered locally, writes invalidated. Wrapping the same client twice with the same
 * `hk` is a no-op; with another `hk` it throws TypeError. `duplicate()` returns a client wrapped
 * the same way.
 */
export function withHotKeys<C extends IoredisLike>(client: C, hk: HotKeyClient, options?: WithHotKeysOptions): C;
export function withHotKeys(client: Client, hk: HotKeyClient, options: WithHotKeysOptions = {}): Client {
  if (!looksLikeIoredis(client)) {
    throw new TypeError(
      'withHotKeys: client must be a Redis or Cluster of ioredis or iovalkey (sendCommand, duplicate, options and status of ioredis)',
    );
  }
  const already = (client as unknown as Partial<Hooked>)[HOOK];
  if (already === hk) return client;
  if (already !== undefined) throw new TypeError('withHotKeys: client is already wrapped with another HotKeyClient');

  const resolved = resolveWrapOptions(options);
  const deployment = deploymentOf(client); // before the hook is placed: it throws on a Cluster it cannot key
  if (!Object.isExtensible(client))
    throw new TypeError('withHotKeys: client is frozen, sealed or not extensible: its dispatch cannot be hooked');
  // checked before anything listens or connects: an own sendCommand it cannot move under the hook throws
  const parts = new IoredisHook(client, hk, resolved, deployment);
  const { base, isCluster, layers } = parts;
  if (parts.replicas !== undefined) replicaSets.set(client, parts.replicas);

  function duplicate(this: Client, ...args: unknown[]): Client {
    const copy = (base.duplicate as (...a: unknown[]) => Client).apply(this, args);
    const override = args[0] as { monitor?: boolean } | undefined;
    // a MONITOR connection (redis.monitor()) carries no reads or writes of its own
    if (!isCluster && override?.monitor === true) return monitorFrom(copy);
    return withHotKeys(copy, hk, options);
  }

  // shadows keep the enumerability of what they shadow, so for-in lists what it lists on a plain client
  const shadow = (name: string, value: unknown): PropertyDescriptor => ({
    value,
    writable: true,
    configurable: true,
    enumerable: isEnumerable(base, name),
  });
  const hooked = Object.create(base, {
    sendCommand: layers.descriptor,
    ...(client.options.showFriendlyErrorStack ? {} : { get: shadow('get', parts.get) }),
    duplicate: shadow('duplicate', duplicate),
    [HOOK]: { value: hk },
    [WRITE_HOT]: { value: parts.writeHot },
    [BREAKERS]: { value: parts.breakers },
    [PUSHED]: { value: { shared: parts.shared, updates: parts.updates } },
  }) as object;
  removeOwnSendCommand(client);
  layers.attach(hooked);
  Object.setPrototypeOf(client, hooked);
  if (Object.getPrototypeOf(client) !== hooked || Object.hasOwn(client, 'sendCommand'))
    throw new TypeError('withHotKeys: the client refused the hook (a Proxy or an exotic object?)');
  return client;
}

/** ioredis's shape (ioredis is an optional peer, not imported): a node-redis client or a plain object fails it. */
function looksLikeIoredis(client: unknown): client is Client {
  if (typeof client !== 'object' || client === null) return false;
  const c = client as Partial<Record<'sendCommand' | 'duplicate' | 'options' | 'status', unknown>>;
  return (
    typeof c.sendCommand === 'function' &&
    typeof c.duplicate === 'function' &&
    typeof c.options === 'object' &&
    c.options !== null &&
    typeof c.status === 'string'
  );
}
