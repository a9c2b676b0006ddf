/**
 * What one `withHotKeys` call of the ioredis adapter sets up (wrapper.ts places it): the parts
 * over the client-agnostic core — circuit breakers, tracking, replica keys, value push, write-hot
 * modes, the hot read path, GET's fast path, write invalidation, multi-key reads — and the
 * dispatch that sends each command the hook is given to one of them. `dispatch` is the one place
 * a command's way is decided; the breaker's word on a command is `guardOf`'s.
 */
import type { Cluster } from 'ioredis';
import type { HotKeyClient } from '../client/client.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import type { NodeBreaker } from '../redis/breaker/breaker.ts';
import { isRead, WRITES, type ReadName } from '../redis/command-table.ts';
import { flatHash } from '../redis/read/hash-replies.ts';
import { hotReads, type HotReads } from '../redis/read/hot-read.ts';
import { keyName } from '../redis/identity.ts';
import { Replicas } from '../redis/read/replicas.ts';
import { SharedRecords } from '../redis/read/shared-records.ts';
import { Tracking } from '../redis/tracking/tracking.ts';
import { trackedReadBack, UpdateWrites } from '../redis/write/update-writes.ts';
import { WrapEvents } from '../redis/wrap-events.ts';
import type { ResolvedWrapOptions } from '../redis/wrap-options.ts';
import { inOpenTransaction, writeInvalidation, type WriteInvalidation } from '../redis/write/write-invalidation.ts';
import { WriteHot } from '../redis/write/write-hot.ts';
import { Breakers, exportBreakerMetrics } from './breaker.ts';
import {
  dispatched,
  inSubscriberMode,
  type Client,
  type RedisCommand,
  type RedisCommandCtor,
  type Send,
} from './command.ts';
import { ownSend } from './counter.ts';
import { dbOf } from './deployment.ts';
import { hotGet } from './hot-get.ts';
import { layerSendCommand, type Layers } from './layers.ts';
import { MultiRead } from './multi-read.ts';
import { connectionTo, ownSender } from './own-connection.ts';
import { ioredisReplicaNodes } from './replica-nodes.ts';
import { hook, isClosing } from './unhooked.ts';

type Proto = Record<string | symbol, unknown>;

export class IoredisHook {
  readonly hk: HotKeyClient;
  readonly client: Client;
  /** the client's prototype before the hook: its class's methods */
  readonly base: Proto;
  readonly isCluster: boolean;
  /** `host:port` (a Cluster: its seed nodes' name, deployment.ts) */
  readonly deployment: string;
  readonly layers: Layers;
  /** sends past the hook: the user's instance patches, then the class's (maybe patched) method, read at each call */
  readonly down: Send;
  readonly breakers: Breakers | undefined;
  /** value push of what this client caches (shared-records.ts), one per hk */
  readonly shared: SharedRecords;
  readonly tracking: Tracking | undefined;
  readonly replicas: Replicas | undefined;
  readonly updates: UpdateWrites | undefined;
  /** shards and coalescing of write-hot keys (write-hot.ts); merged writes invalidate like any write */
  readonly writeHot: WriteHot;
  readonly reads: HotReads<Client>;
  /** GET's fast path, installed as the client's `get` method (hot-get.ts) */
  readonly get: (this: Client, ...args: unknown[]) => unknown;
  readonly writes: WriteInvalidation;
  readonly multiRead: MultiRead;
  /** ioredis's Command class, taken from the first command through the hook (ioredis is an optional peer: not imported) */
  #Ctor: RedisCommandCtor | undefined;
  #lastDb = -1;
  #lastNs: string;

  /**
   * Throws TypeError, before anything listens or connects, for an own `sendCommand` it cannot
   * move under the hook (layers.ts).
   */
  constructor(client: Client, hk: HotKeyClient, options: ResolvedWrapOptions, deployment: string) {
    this.hk = hk;
    this.client = client;
    this.base = Object.getPrototypeOf(client) as Proto;
    this.deployment = deployment;
    this.#lastNs = deployment;
    this.isCluster = (client as Partial<Cluster>).isCluster === true;
    const self = this;
    this.layers = layerSendCommand(
      client,
      this.base,
      function sendCommand(this: Client, command: RedisCommand, stream?: unknown, node?: unknown): unknown {
        return self.dispatch(this, command, stream, node, self.down, false);
      } as never,
      // a command a patch above the hook saw before it was moved under (layers.ts): sent on with `send`, as a plain client sends it
      function sendSeen(this: Client, command: RedisCommand, stream: unknown, node: unknown, send: Send): unknown {
        return self.dispatch(this, command, stream, node, send, true);
      } as never,
    );
    this.down = this.layers.down as unknown as Send;
    this.breakers = this.#makeBreakers(options);
    this.shared = SharedRecords.of(hk);
    this.tracking = this.#makeTracking(options);
    this.replicas = this.#makeReplicas(options);
    this.updates = this.#makeUpdates(options);
    this.writeHot = new WriteHot(hk, ownSend(client), (key) => {
      const done = this.writes.invalidate([key]);
      return options.awaitInvalidation ? done : Promise.resolve();
    });
    // promotions, demotions and hk's close reach this client's parts while it is open (one listener per hk)
    WrapEvents.of(hk).follow(client, [this.writeHot, this.tracking, this.replicas]);
    if (this.isCluster) this.shared.noteNamespace(deployment);
    else this.namespaceOf(client);
    this.reads = this.#makeReads();
    this.get = this.#makeGet();
    this.writes = writeInvalidation({
      hk,
      isCluster: this.isCluster,
      deployment,
      namespaceOf: (c) => this.namespaceOf(c as Client),
      awaitInvalidation: options.awaitInvalidation,
      onInvalidateError: options.onInvalidateError,
      updates: this.updates,
      replicas: this.replicas,
      canSend: () => this.#Ctor !== undefined,
    });
    this.multiRead = this.#makeMultiRead();
  }

  #makeBreakers(options: ResolvedWrapOptions): Breakers | undefined {
    if (options.breaker === undefined) return undefined;
    const hk = this.hk;
    const breakers = new Breakers(this.client, options.breaker, (node, state) => hk.emit('breaker', { node, state }));
    exportBreakerMetrics(hk, this.client, breakers);
    return breakers;
  }

  #makeTracking(options: ResolvedWrapOptions): Tracking | undefined {
    if (options.tracking === undefined) return undefined;
    const { client, base, shared } = this;
    return new Tracking(
      client,
      this.hk,
      (nodeKey, role) => connectionTo(client, base, nodeKey, role),
      options.tracking,
      (key) => {
        this.replicas?.outsideWrite(key);
        shared.heard(key);
      },
      (session) => shared.ended(session),
    );
  }

  #makeReplicas(options: ResolvedWrapOptions): Replicas | undefined {
    if (options.replicas === undefined) return undefined;
    /** a command of ours to the node holding args' key, past the hook */
    const sendOwn = ownSender(this.client, this.down, () => this.#Ctor);
    return new Replicas(this.hk, ioredisReplicaNodes(this.client, sendOwn), this.tracking, options.replicas);
  }

  #makeUpdates(options: ResolvedWrapOptions): UpdateWrites | undefined {
    const tracking = this.tracking;
    if (options.writes !== 'update' || tracking === undefined) return undefined;
    const client = this.client;
    return new UpdateWrites(
      this.hk,
      this.shared,
      trackedReadBack(tracking, (node, key) =>
        this.reads.trackedLoad(node.load.bind(node), 'get', key, client, this.namespaceOf(client), performance.now()),
      ),
    );
  }

  #makeReads(): HotReads<Client> {
    const breakers = this.breakers;
    return hotReads<Client>({
      hk: this.hk,
      isCluster: this.isCluster,
      tracking: this.tracking,
      replicas: this.replicas,
      namespaceOf: (c) => this.namespaceOf(c),
      dbOf,
      ready: (c) => c.status === 'ready',
      // ioredis's Command class, taken from the caller's command: same client, same ioredis
      command: (like, name, args) => new (like.constructor as RedisCommandCtor)(name, args, { replyEncoding: 'utf8' }),
      loadBlocked: (key) => this.loadBlocked(key),
      // watches a command a load sends itself (past the hook)
      watchLoad: (command) => {
        const node = breakers?.nodeOf(command);
        if (node !== undefined) breakers!.watchRead(node, command);
      },
      // handed over as Redis's flat reply: ioredis's transformer builds the caller's object as it
      // builds it from Redis's, whatever the field names
      hashReply: (_command, hash) => flatHash(hash),
      // a cold read through the cache is timed when it goes out (a GET held till the end of the
      // job goes out only then, however long the job runs): the read path tells the breaker
      guard: breakers?.guard,
      // the job's held GETs leave in one write (a standalone client's socket; a Cluster's go to several)
      batch: this.isCluster ? undefined : corked,
    });
  }

  #makeGet(): (this: Client, ...args: unknown[]) => unknown {
    return hotGet({
      hk: this.hk,
      base: this.base,
      tracking: this.tracking,
      replicas: this.replicas !== undefined,
      namespaceOf: (c) => this.namespaceOf(c),
      loadBlocked: (key) => this.loadBlocked(key),
      sharded: (key) => this.writeHot.owns(key),
      inTransaction: inOpenTransaction,
      trackedLoad: this.reads.trackedLoad,
      hookOnTop: this.layers.hookOnTop,
    });
  }

  #makeMultiRead(): MultiRead {
    const { reads, down, writeHot } = this;
    return new MultiRead({
      hk: this.hk,
      isCluster: this.isCluster,
      servable: (c) => c.status !== 'end' && !inSubscriberMode(c),
      get: (c, key) => this.get.call(c, key) as Promise<unknown>,
      read: (c, command) => {
        dispatched.add(command);
        void reads.read(c, down, command as RedisCommand, command.name as ReadName);
      },
      send: (c, command, stream, node) => {
        dispatched.add(command);
        if (stream !== undefined || !this.blocked(c, command as RedisCommand))
          void down.call(c, command as RedisCommand, stream, node);
      },
      sharded: (key) => writeHot.owns(key),
      sum: (c, command) => (c.options.keyPrefix ? undefined : writeHot.route(command, 'get')),
    });
  }

  /** `host:port/db` (a Cluster has one database); memoised, the db rarely changes */
  namespaceOf(client: Client): string {
    if (this.isCluster) return this.deployment;
    const db = dbOf(client);
    if (db !== this.#lastDb) {
      this.#lastDb = db;
      this.#lastNs = `${this.deployment}/${db}`;
      this.shared.noteNamespace(this.#lastNs); // pushed records of it may be injected here
    }
    return this.#lastNs;
  }

  /**
   * Where a command goes: `send` is what lies under the hook; `seen`, a command a user's patch saw
   * already — it is counted and its writes invalidated, but nothing is answered locally, merged
   * or refused, so that the patch saw a command that reaches Redis.
   */
  dispatch(client: Client, command: RedisCommand, stream: unknown, node: unknown, send: Send, seen: boolean): unknown {
    const { reads } = this;
    if (stream !== undefined) this.multiRead.resending(command, stream);
    // a UTF-8 GET on its own may be held by the read path till the end of the job (held-reads.ts);
    // any other command sends what is held first, so the connection sees the plain client's order
    if (seen || hook.bypass || stream !== undefined || command.name !== 'get' || command.replyEncoding !== 'utf8')
      reads.flush(client);
    if (hook.plain && stream === undefined) {
      // the GET fast path's read of a hot key hk does not cache, counted there (hot-get.ts)
      dispatched.add(command);
      return reads.plain(client, send, command);
    }
    if (hook.bypass) return this.#own(client, command, stream, node, send);
    if (dispatched.has(command)) return send.call(client, command, stream, node);
    let name = command.name;
    // call('SET', …) keeps the caller's case; ioredis's own methods are lower case already
    if (!isRead(name) && !WRITES.has(name) && name !== 'exec') name = name.toLowerCase();
    this.#Ctor ??= command.constructor as RedisCommandCtor;
    if (seen) {
      if (isRead(name)) {
        const key = keyName(command.args[0]);
        if (key !== undefined) this.hk.track(key);
      }
      this.writes.note(client, command, name, stream);
      return send.call(client, command, stream, node);
    }
    return this.#dispatchNew(client, command, name, stream, node, send);
  }

  /** A command sent by the GET fast path (which counted it already) or by the adapter's own features. */
  #own(client: Client, command: RedisCommand, stream: unknown, node: unknown, send: Send): unknown {
    dispatched.add(command);
    if (stream === undefined && isClosing(client)) {
      // a fold, merged increment or probe of ours behind the user's QUIT would meet a closing socket
      command.reject(new HotKeyError(ErrorCode.Closed, `${command.name}: the Redis client is closing`));
      return command.promise;
    }
    if (stream === undefined && this.blocked(client, command)) return command.promise;
    return send.call(client, command, stream, node);
  }

  /** `dispatch` for a command the hook has not seen: limits, write-hot routes, multi-key reads, the read path, writes. */
  #dispatchNew(
    client: Client,
    command: RedisCommand,
    name: string,
    stream: unknown,
    node: unknown,
    send: Send,
  ): unknown {
    const { hk, tracking, writeHot } = this;
    // the client's first read of a key opens the tracking connections (tracking.ts), before a key
    // turns hot; one-key reads are noted by the read path (hot-read.ts), once their key is checked
    if (tracking !== undefined && (name === 'mget' || name === 'hmget') && command.args.length > 0) tracking.reading();
    // rate limits apply to commands on their own (not inside a pipeline or MULTI, where a command left out would shift the replies)
    if (hk.limiting && stream === undefined && command.inTransaction !== true && !inOpenTransaction(client)) {
      const refused = this.#refuse(command, isRead(name));
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
    const answered = this.multiRead.dispatch(client, command, name, stream, node, inOpenTransaction(client));
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
    return this.#guarded(client, command, name, stream, node, send, viaCache);
  }

  /**
   * The breaker's word (as `blocked` gives it, the connection's own handshake let through), asked
   * once: a read through the cache is timed by the read path when it goes to Redis cold (its
   * guard), anything else watched now; then the read path or Redis.
   */
  #guarded(
    client: Client,
    command: RedisCommand,
    name: string,
    stream: unknown,
    node: unknown,
    send: Send,
    viaCache: boolean,
  ): unknown {
    const breakers = this.breakers;
    const guard = stream === undefined ? this.guardOf(client, command, name, viaCache) : undefined;
    if (guard !== undefined) {
      if (breakers!.isOpen(guard)) {
        command.reject(breakers!.reject(guard));
        dispatched.add(command);
        return command.promise;
      }
      if (!viaCache) breakers!.watch(guard, command);
    }
    if (viaCache && isRead(name)) {
      dispatched.add(command);
      return this.reads.read(client, send, command, name, guard);
    }
    this.reads.flush(client); // a GET not read through the cache (a subscriber's, a closed client's)
    this.writes.note(client, command, name, stream);
    return send.call(client, command, stream, node);
  }

  /**
   * The breaker guarding `command`'s node; undefined without breakers, past the hook, or for the
   * connection's own handshake (status 'connect': ioredis's ready check, SELECT, CLIENT SETNAME,
   * written before the client is ready — refused, ioredis drops the connection and starts over,
   * so a breaker that was open when Redis came back kept the client from ever becoming ready, and
   * its probe, queued until then, from ever closing it). A hot key's read is not guarded: its
   * load asks `loadBlocked`, so that a rejected load can fall back on the cached value. `viaCache`
   * (a read the read path takes): whether its key is hot is asked only while the node is open —
   * the read path times it only if it goes to Redis cold.
   */
  guardOf(client: Client, command: RedisCommand, name: string, viaCache = false): NodeBreaker | undefined {
    const breakers = this.breakers;
    if (breakers === undefined || hook.unguarded || client.status === 'connect') return undefined;
    const node = breakers.nodeOf(command);
    if (node === undefined || !isRead(name)) return node;
    if (viaCache && !breakers.isOpen(node)) return node;
    return this.#isHotKey(command.args[0]) ? undefined : node;
  }

  /**
   * The circuit breaker's word on a command sent on its own: rejected at once (true) while its
   * node's breaker is open, else watched for its outcome.
   */
  blocked(client: Client, command: RedisCommand): boolean {
    const node = this.guardOf(client, command, '');
    if (node === undefined) return false;
    if (this.breakers!.isOpen(node)) {
      command.reject(this.breakers!.reject(node));
      return true;
    }
    this.breakers!.watch(node, command);
    return false;
  }

  /** A load of `key` while its node's breaker is open: the error it rejects with at once. */
  loadBlocked(key: string): Error | undefined {
    const breakers = this.breakers;
    const node = breakers?.nodeFor(key);
    return node !== undefined && breakers!.isOpen(node) ? breakers!.reject(node) : undefined;
  }

  #isHotKey(arg: unknown): boolean {
    const key = keyName(arg);
    return key !== undefined && this.hk.isHot(key);
  }

  /**
   * The per-key rate limit (a rule's `limit`) of the command's first key: a refused command is
   * rejected with HK_ERR_RATE_LIMITED without being sent. Returns its promise when refused.
   */
  #refuse(command: RedisCommand, isReadCommand: boolean): Promise<unknown> | undefined {
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
    if (this.hk.allow(key, false)) return undefined;
    this.hk.track(key, isReadCommand ? 'read' : 'write');
    command.reject(new HotKeyError(ErrorCode.RateLimited, `rate limit of "${key}" reached`));
    return command.promise;
  }
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
