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
 * are own-connection.ts's. This file is the dispatch: which of them a command goes to.
 * Each command is counted once: the hook marks what it dispatched (cmd.ts), and ioredis
 * re-sending a command (offline queue, reconnect, NOSCRIPT) passes straight through.
 */
import type { Cluster } from 'ioredis';
import type { HotKeyClient } from '../client/client.ts';
import { isRead, WRITES, type ReadName } from '../redis/commands.ts';
import { dispatched, inSubscriberMode, type Client, type Cmd, type CmdCtor, type Send } from './cmd.ts';
import { keyName } from '../redis/identity.ts';
import { dbOf, deploymentOf } from './deployment.ts';
import { Tracking } from '../redis/tracking.ts';
import { hook, isClosing } from './unhooked.ts';
import { WriteHot } from '../redis/write-hot.ts';
import { WrapEvents } from '../redis/wrap-events.ts';
import { ownSend } from './counter.ts';
import { Breakers, exportBreakerMetrics } from './breaker.ts';
import type { NodeBreaker } from '../redis/breaker.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import { Replicas, type ReplicaStats } from '../redis/replicas.ts';
import { ioredisReplicaNodes } from './replica-nodes.ts';
import { SharedRecords } from '../redis/shared-records.ts';
import { trackedReadBack, UpdateWrites } from '../redis/update-writes.ts';
import { isEnumerable, layerSendCommand, removeOwnSendCommand } from './layers.ts';
import { MultiRead } from './multi-read.ts';
import { hotReads } from '../redis/hot-read.ts';
import { flatHash } from '../redis/hash-replies.ts';
import { hotGet } from './hot-get.ts';
import { inOpenTransaction, writeInvalidation } from '../redis/write-invalidation.ts';
import { connectionTo, ownSender } from './own-connection.ts';
import { monitorFrom } from './monitor.ts';
import type { WithHotKeysOptions } from './options.ts';
import type { IoredisLike } from './client-shape.ts';

export type { WithHotKeysOptions } from './options.ts';
export type { IoredisLike } from './client-shape.ts';

const replicaSets = new WeakMap<object, Replicas>();

/** What a wrapped client's replica keys did (redis/replicas.ts); undefined for a client without them. */
export function replicaStats(client: object): Readonly<ReplicaStats> | undefined {
  return replicaSets.get(client)?.stats;
}

const HOOK: unique symbol = Symbol('hotkey.ioredis');
/** the write-hot modes (redis/write-hot.ts) of a wrapped client, for `hotKeyStats` / `flushWrites` */
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

  const writeMode = options.writes ?? 'invalidate';
  if (writeMode !== 'invalidate' && writeMode !== 'update')
    throw new TypeError(`withHotKeys: writes must be 'invalidate' or 'update', got ${String(writeMode)}`);
  const awaitInvalidation = options.awaitInvalidation ?? true;
  const onInvalidateError = options.onInvalidateError ?? (() => {});
  const base = Object.getPrototypeOf(client) as Record<string | symbol, unknown>;
  const deployment = deploymentOf(client); // before the hook is placed: it throws on a Cluster it cannot key
  if (!Object.isExtensible(client))
    throw new TypeError('withHotKeys: client is frozen, sealed or not extensible: its dispatch cannot be hooked');
  // checked before anything listens or connects: an own sendCommand it cannot move under the hook throws
  const layers = layerSendCommand(client, base, sendCommand as never, sendSeen as never);
  /** sends past the hook: the user's instance patches, then the class's (maybe patched) method, read at each call */
  const down = layers.down as unknown as Send;
  const isCluster = (client as Partial<Cluster>).isCluster === true;
  // first: it validates its options, before anything listens or connects
  const breakerOptions = options.breaker ?? true;
  const breakers =
    breakerOptions === false
      ? undefined
      : new Breakers(client, breakerOptions === true ? {} : breakerOptions, (node, state) =>
          hk.emit('breaker', { node, state }),
        );
  if (breakers !== undefined) exportBreakerMetrics(hk, client, breakers);

  // value push of what this client caches (shared-records.ts), one per hk
  const shared = SharedRecords.of(hk);
  const trackingOptions = options.tracking ?? true;
  const tracking =
    trackingOptions === false
      ? undefined
      : new Tracking(
          client,
          hk,
          (nodeKey, role) => connectionTo(client, base, nodeKey, role),
          trackingOptions === true ? {} : trackingOptions,
          (key) => {
            replicas?.outsideWrite(key);
            shared.heard(key);
          },
          (session) => shared.ended(session),
        );
  /** ioredis's Command class, taken from the first command through the hook (ioredis is an optional peer: not imported) */
  let Ctor: CmdCtor | undefined;
  /** a command of ours to the node holding args' key, past the hook */
  const sendOwn = ownSender(client, down, () => Ctor);
  const replicas =
    options.replicas === false
      ? undefined
      : new Replicas(hk, ioredisReplicaNodes(client, sendOwn), tracking, options.replicas ?? {});
  if (replicas !== undefined) replicaSets.set(client, replicas);
  const updates =
    writeMode === 'update' && tracking !== undefined
      ? new UpdateWrites(
          hk,
          shared,
          trackedReadBack(tracking, (node, key) =>
            reads.trackedLoad(node.load.bind(node), 'get', key, client, namespaceOf(client), performance.now()),
          ),
        )
      : undefined;

  /**
   * The per-key rate limit (a rule's `limit`) of the command's first key: a refused command is
   * rejected with HK_ERR_RATE_LIMITED without being sent. Returns its promise when refused.
   */
  function refuse(command: Cmd, isReadCommand: boolean): Promise<unknown> | undefined {
    let first: unknown;
    try {
      first = command.getKeys()[0];
    } catch {
      return undefined; // arguments ioredis cannot find keys in: Redis will answer with its own error
    }
    const key = first === undefined ? undefined : keyName(first);
    if (key === undefined) return undefined;
    // an admitted command is counted on its way, once, as its kind (reads in read(), writes as
    // 'write' for write-hot detection): the rule's kind decides which count towards the limit's
    // demand; every command takes a token
    if (hk.allow(key, false)) return undefined;
    hk.track(key, isReadCommand ? 'read' : 'write');
    command.reject(new HotKeyError(ErrorCode.RateLimited, `rate limit of "${key}" reached`));
    return command.promise;
  }

  // shards and coalescing of write-hot keys (write-hot.ts); merged writes invalidate like any write
  const writeHot = new WriteHot(hk, ownSend(client), (key) => {
    const done = writes.invalidate([key]);
    return awaitInvalidation ? done : Promise.resolve();
  });
  // promotions, demotions and hk's close reach this client's parts while it is open (one listener per hk)
  WrapEvents.of(hk).follow(client, [writeHot, tracking, replicas]);

  /** The breaker guarding `command`'s node; undefined without breakers, past the hook, or for a hot key's read (its load asks `loadBlocked`). */
  function guardOf(command: Cmd, name: string): NodeBreaker | undefined {
    if (breakers === undefined || hook.unguarded) return undefined;
    const node = breakers.nodeOf(command);
    return node === undefined || (isRead(name) && isHotKey(command.args[0])) ? undefined : node;
  }
  /**
   * The circuit breaker's word on a command sent on its own: rejected at once (true) while its
   * node's breaker is open, else watched for its outcome (unless `watch` is false). Hot reads
   * (`name`) pass: their loads ask `loadBlocked` instead, so that a rejected load can fall back on
   * the cached value. The connection's own handshake (status 'connect': ioredis's ready check, SELECT,
   * CLIENT SETNAME, written before the client is ready) is never refused nor timed: refused, ioredis
   * drops the connection and starts over, so a breaker that was open when Redis came back kept the
   * client from ever becoming ready, and its probe, queued until then, from ever closing it.
   */
  function blocked(client: Client, command: Cmd, name = '', watch = true): boolean {
    const node = guardOf(command, name);
    if (node === undefined || client.status === 'connect') return false;
    if (breakers!.isOpen(node)) {
      command.reject(breakers!.reject(node));
      return true;
    }
    if (watch) breakers!.watch(node, command);
    return false;
  }
  /** The breaker of `command`'s node, hot or not; undefined without breakers or past the hook. */
  function nodeGuard(command: Cmd): NodeBreaker | undefined {
    return breakers === undefined || hook.unguarded ? undefined : breakers.nodeOf(command);
  }
  /** A load of `key` while its node's breaker is open: the error it rejects with at once. */
  function loadBlocked(key: string): Error | undefined {
    const node = breakers?.nodeFor(key);
    return node !== undefined && breakers!.isOpen(node) ? breakers!.reject(node) : undefined;
  }
  /** Watches a command a load sends itself (past the hook). */
  function watchLoad(command: Cmd): void {
    const node = breakers?.nodeOf(command);
    if (node !== undefined) breakers!.watchRead(node, command);
  }

  function isHotKey(arg: unknown): boolean {
    const key = keyName(arg);
    return key !== undefined && hk.isHot(key);
  }

  let lastDb = -1;
  let lastNs = deployment;
  /** `host:port/db` (a Cluster has one database); memoised, the db rarely changes */
  function namespaceOf(client: Client): string {
    if (isCluster) return deployment;
    const db = dbOf(client);
    if (db !== lastDb) {
      lastDb = db;
      lastNs = `${deployment}/${db}`;
      shared.noteNamespace(lastNs); // pushed records of it may be injected here
    }
    return lastNs;
  }
  if (isCluster) shared.noteNamespace(deployment);
  else namespaceOf(client);

  const reads = hotReads<Client>({
    hk,
    isCluster,
    tracking,
    replicas,
    namespaceOf,
    dbOf,
    ready: (c) => c.status === 'ready',
    // ioredis's Command class, taken from the caller's command: same client, same ioredis
    command: (like, name, args) => new (like.constructor as CmdCtor)(name, args, { replyEncoding: 'utf8' }),
    loadBlocked,
    watchLoad,
    // handed over as Redis's flat reply: ioredis's transformer builds the caller's object as it
    // builds it from Redis's, whatever the field names
    hashReply: (_command, hash) => flatHash(hash),
    // a cold read through the cache is timed when it goes out (a GET held till the end of the
    // job goes out only then, however long the job runs): the read path tells the breaker
    guard: breakers?.guard,
    // the job's held GETs leave in one write (a standalone client's socket; a Cluster's go to several)
    batch: isCluster ? undefined : corked,
  });
  const { read } = reads;
  const get = hotGet({
    hk,
    base,
    tracking,
    replicas: replicas !== undefined,
    namespaceOf,
    loadBlocked,
    sharded: (key) => writeHot.owns(key),
    inTransaction: inOpenTransaction,
    trackedLoad: reads.trackedLoad,
    hookOnTop: layers.hookOnTop,
  });
  const writes = writeInvalidation({
    hk,
    isCluster,
    deployment,
    namespaceOf,
    awaitInvalidation,
    onInvalidateError,
    updates,
    replicas,
    canSend: () => Ctor !== undefined,
  });

  const multiRead = new MultiRead({
    hk,
    isCluster,
    servable: (c) => c.status !== 'end' && !inSubscriberMode(c),
    get: (c, key) => get.call(c, key) as Promise<unknown>,
    read: (c, command) => {
      dispatched.add(command);
      void read(c, down, command as Cmd, command.name as ReadName);
    },
    send: (c, command, stream, node) => {
      dispatched.add(command);
      if (stream !== undefined || !blocked(c, command as Cmd)) void down.call(c, command as Cmd, stream, node);
    },
    sharded: (key) => writeHot.owns(key),
    sum: (c, command) => (c.options.keyPrefix ? undefined : writeHot.route(command, 'get')),
  });

  function sendCommand(this: Client, command: Cmd, stream?: unknown, node?: unknown): unknown {
    return dispatch(this, command, stream, node, down, false);
  }
  /** A command a patch above the hook saw before it was moved under (layers.ts): sent on with `send`, as a plain client sends it. */
  function sendSeen(this: Client, command: Cmd, stream: unknown, node: unknown, send: Send): unknown {
    return dispatch(this, command, stream, node, send, true);
  }

  /**
   * Where a command goes: `send` is what lies under the hook; `seen`, a command a user's patch saw
   * already — it is counted and its writes invalidated, but nothing is answered locally, merged
   * or refused, so that the patch saw a command that reaches Redis.
   */
  function dispatch(client: Client, command: Cmd, stream: unknown, node: unknown, send: Send, seen: boolean): unknown {
    if (stream !== undefined) multiRead.resending(command, stream);
    // a UTF-8 GET on its own may be held by the read path till the end of the job (held-reads.ts);
    // any other command sends what is held first, so the connection sees the plain client's order
    if (seen || hook.bypass || stream !== undefined || command.name !== 'get' || command.replyEncoding !== 'utf8')
      reads.flush(client);
    if (hook.plain && stream === undefined) {
      // the GET fast path's read of a hot key hk does not cache, counted there (hot-get.ts)
      dispatched.add(command);
      return reads.plain(client, send, command);
    }
    if (hook.bypass) {
      // sent by the GET fast path below (which counted it already) or by the adapter's own features
      dispatched.add(command);
      if (stream === undefined && isClosing(client)) {
        // a fold, merged increment or probe of ours behind the user's QUIT would meet a closing socket
        command.reject(new HotKeyError(ErrorCode.Closed, `${command.name}: the Redis client is closing`));
        return command.promise;
      }
      if (stream === undefined && blocked(client, command)) return command.promise;
      return send.call(client, command, stream, node);
    }
    if (dispatched.has(command)) return send.call(client, command, stream, node);
    let name = command.name;
    // call('SET', …) keeps the caller's case; ioredis's own methods are lower case already
    if (!isRead(name) && !WRITES.has(name) && name !== 'exec') name = name.toLowerCase();
    Ctor ??= command.constructor as CmdCtor;
    if (seen) {
      if (isRead(name)) {
        const key = keyName(command.args[0]);
        if (key !== undefined) hk.track(key);
      }
      writes.note(client, command, name, stream);
      return send.call(client, command, stream, node);
    }
    // the client's first read of a key opens the tracking connections (tracking.ts), before a key
    // turns hot; one-key reads are noted by the read path (hot-read.ts), once their key is checked
    if (tracking !== undefined && (name === 'mget' || name === 'hmget') && command.args.length > 0) tracking.reading();
    // rate limits apply to commands on their own (not inside a pipeline or MULTI, where a command left out would shift the replies)
    if (hk.limiting && stream === undefined && command.inTransaction !== true && !inOpenTransaction(client)) {
      const refused = refuse(command, isRead(name));
      if (refused !== undefined) return refused;
    }
    const open = stream === undefined && inOpenTransaction(client);
    if (stream === undefined && !open && writeHot.active) {
      if (name === 'quit') void writeHot.flush(); // merged increments go out before QUIT
      // routed commands are not watched by the breaker: the commands they send are
      // with a keyPrefix, ioredis would prefix the (full-key) shard names of our own commands again
      const routed = client.options.keyPrefix ? undefined : writeHot.route(command, name);
      if (routed !== undefined) {
        dispatched.add(command);
        return routed;
      }
    }
    // MGET, HMGET, Buffer replies, reads in a pipeline (multi-read.ts); never a MULTI's commands
    const answered = multiRead.dispatch(client, command, name, stream, node, inOpenTransaction(client));
    if (answered !== undefined) {
      dispatched.add(command);
      return answered;
    }
    const viaCache =
      stream === undefined &&
      !open &&
      isRead(name) &&
      typeof command.replyEncoding === 'string' &&
      client.status !== 'end' &&
      !inSubscriberMode(client);
    // the breaker's word (as `blocked` gives it, the connection's own handshake let through),
    // asked once: a read through the cache is timed by the read path when it goes to Redis cold
    // (its guard), anything else watched now. A hot key's read is never refused here: its load
    // asks `loadBlocked`, so that it may serve the cached value; asked only while the node is open
    const guard = stream === undefined ? (viaCache ? nodeGuard(command) : guardOf(command, name)) : undefined;
    if (guard !== undefined && client.status !== 'connect') {
      if (breakers!.isOpen(guard) && !(viaCache && isHotKey(command.args[0]))) {
        command.reject(breakers!.reject(guard));
        dispatched.add(command);
        return command.promise;
      }
      if (!viaCache) breakers!.watch(guard, command);
    }
    if (viaCache && isRead(name)) {
      dispatched.add(command);
      return read(client, send, command, name, guard);
    }
    reads.flush(client); // a GET not read through the cache (a subscriber's, a closed client's)
    writes.note(client, command, name, stream);
    return send.call(client, command, stream, node);
  }

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
    ...(client.options.showFriendlyErrorStack ? {} : { get: shadow('get', get) }),
    duplicate: shadow('duplicate', duplicate),
    [HOOK]: { value: hk },
    [WRITE_HOT]: { value: writeHot },
    [BREAKERS]: { value: breakers },
    [PUSHED]: { value: { shared, updates } },
  }) as object;
  removeOwnSendCommand(client);
  layers.attach(hooked);
  Object.setPrototypeOf(client, hooked);
  if (Object.getPrototypeOf(client) !== hooked || Object.hasOwn(client, 'sendCommand'))
    throw new TypeError('withHotKeys: the client refused the hook (a Proxy or an exotic object?)');
  return client;
}

/**
 * Runs `run` with `client`'s socket corked, so that the commands it writes leave in one write:
 * the cold GETs of one job, held till its end (held-reads.ts), cost one system call, not one
 * each. The bytes and their order are what the plain client writes; only the syscalls are fewer
 * (as ioredis's `enableAutoPipelining` and node-redis's write batching do).
 */
function corked(client: Client, run: () => void): void {
  const stream = (client as { stream?: { writable?: boolean; cork?: () => void; uncork?: () => void } }).stream;
  if (client.status !== 'ready' || stream?.writable !== true || typeof stream.cork !== 'function') return run();
  stream.cork();
  try {
    run();
  } finally {
    stream.uncork!();
  }
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
