/**
 * The node-redis dispatch the adapter hooks, on one `RedisClient` (v5 and v6 dispatch alike):
 * - every command method, script and function call, and `sendCommand(args, options)` itself,
 *   reaches `sendCommand` with the argument list Redis gets (key prefix applied): the hook there
 *   answers hot GETs locally (redis/read/hot-read.ts), hot hash reads (hash-reads.ts), and the hot
 *   keys of an MGET with only the others sent in one MGET, and settles writes after their invalidation
 *   (redis/write/write-invalidation.ts);
 * - `multi().exec()` and `multi().execAsPipeline()` reach `_executeMulti` / `_executePipeline`
 *   with the queued argument lists, past `sendCommand`: their writes are invalidated when the
 *   batch replies (a transaction's, or a failed one's, too);
 * - `duplicate()` returns a client wrapped the same way; `createPool()` a pool wrapped so.
 * The hook is a prototype inserted under the client (`client → hooked → RedisClient.prototype`),
 * so the `withCommandOptions` / `withTypeMapping` / `asap` proxies node-redis makes over the
 * client go through it, and the instance gets no own property. Reads under a type mapping of
 * bulk strings to Buffers are answered as Buffers (buffer-reads.ts). Nothing is served locally
 * under a type mapping the hook cannot tell (type-mapping.ts), in a RESP2 subscriber, in an open
 * MULTI, or before the client is ready (node-redis queues or refuses that read itself) unless
 * its node's circuit breaker is open (breaker.ts: a reconnecting client then serves hot keys).
 */
import { ErrorCode, HotKeyError } from '../errors.ts';
import { KEYSPACE_WRITES, WRITES } from '../redis/command-table.ts';
import { keyName } from '../redis/identity.ts';
import { keysOf } from '../redis/key-specs.ts';
import { inOpenTransaction } from '../redis/write/write-invalidation.ts';
import { commandName } from './command-name.ts';
import { commandOf, type CommandOptions, type Context, type NodeRedisClient } from './context.ts';
import { isOwn } from './own-send.ts';
import { closeHooks, routeWriteHot } from './write-hot.ts';
import { HASH_READS, hashReads } from './hash-reads.ts';
import { flushingMethods, pointAliases } from './held-order.ts';
import { buffersFor, typeMappingOf, UNKNOWN } from './type-mapping.ts';
import { ASK_REDIS, bufferReads, cachedRead, type SendPlain } from './buffer-reads.ts';
import type { RedisCommand, Send } from '../redis/command.ts';

export const HOOK: unique symbol = Symbol('hotkey.node-redis');

const READ_NAMES: ReadonlySet<string> = new Set(['get', 'mget', 'hget', 'hgetall', 'hmget']);

/** a batch's queued commands, as node-redis hands them to `_executeMulti` / `_executePipeline` */
type Queued = ReadonlyArray<{ args: readonly unknown[] }>;
type Proto = Record<string | symbol, unknown>;
type Method = (this: NodeRedisClient, ...args: unknown[]) => unknown;

const lowerName = commandName;

/** The hooks' context of a hooked client (undefined for a client not hooked). */
export function hookOf(client: object): Context | undefined {
  return (client as { [HOOK]?: Context })[HOOK];
}

/**
 * Hooks `real` (a node-redis client's `_self`) with `ctx`; `rewrap` wraps a duplicate or a pool
 * made from it the same way.
 */
export function hookClient(real: NodeRedisClient, ctx: Context, rewrap: (copy: object) => object): void {
  new ClientHook(real, ctx, rewrap).install();
}

/**
 * The hook on one client: its methods (`sendCommand`, the batches, `duplicate`, `createPool`)
 * on a prototype under the client, and what they send through (`send`, past the hook).
 */
class ClientHook {
  readonly #real: NodeRedisClient;
  readonly #ctx: Context;
  readonly #rewrap: (copy: object) => object;
  /** the prototype under the hook: the breaker's layer over the class's methods */
  readonly #base: Proto;
  readonly #buffers: ReturnType<typeof bufferReads>;
  readonly #hashes: ReturnType<typeof hashReads>;
  /** the core's Send: a command of ours or the caller's, past the hook, settling the command */
  readonly send: Send<NodeRedisClient>;
  readonly #sendPlain: SendPlain;

  constructor(real: NodeRedisClient, ctx: Context, rewrap: (copy: object) => object) {
    this.#real = real;
    this.#ctx = ctx;
    this.#rewrap = rewrap;
    // the breaker's layer goes under the hook: what the hook sends reaches Redis through it
    const base = (ctx.breaker?.layer(real) ?? Object.getPrototypeOf(real)) as Proto;
    this.#base = base;
    this.send = function send(this: NodeRedisClient, command: RedisCommand): unknown {
      const own = command as Partial<ReturnType<typeof commandOf>>;
      const argv = own.argv ?? [command.name.toUpperCase(), ...command.args];
      // the settling functions as they are now: a write's were wrapped before it is sent (write-invalidation.ts)
      ((base.sendCommand as Method).call(this, argv, own.options) as Promise<unknown>).then(
        command.resolve,
        command.reject,
      );
      return command.promise;
    };
    this.#sendPlain = (self, argv, options) =>
      (base.sendCommand as Method).call(self, argv, options) as Promise<unknown>;
    this.#buffers = bufferReads(ctx, this.send, this.#sendPlain);
    this.#hashes = hashReads(ctx, this.send, this.#sendPlain, this.#buffers);
  }

  #method(name: string): Method {
    return this.#base[name] as Method;
  }

  /** the rate limit (a rule's `limit`) of the command's first key: refused, it is not sent */
  #refused(argv: readonly unknown[], name: string): Promise<never> | undefined {
    const hk = this.#ctx.hk;
    const key = keyName((keysOf(argv) ?? [])[0]);
    if (key === undefined || hk.allow(key, false)) return undefined;
    hk.track(key, READ_NAMES.has(name) ? 'read' : 'write');
    return Promise.reject(new HotKeyError(ErrorCode.RateLimited, `rate limit of "${key}" reached`));
  }

  /** The hooked `sendCommand`, called with the client (or a proxy of it) as `client`. */
  sendCommand(client: NodeRedisClient, argv: readonly unknown[], options?: CommandOptions): unknown {
    const { hk, reads } = this.#ctx;
    const ctx = this.#ctx;
    if (!Array.isArray(argv) || argv.length === 0 || isOwn(options)) {
      reads.flush(client._self ?? client);
      return this.#method('sendCommand').call(client, argv, options); // a command of the core's own passes (own-send.ts)
    }
    const name = lowerName(argv[0]);
    const self = client._self ?? client;
    const open = inOpenTransaction(self);
    const chained = options?.chainId !== undefined; // ASKING + command, or a handshake: sent as one
    if (hk.limiting && !open && !chained) {
      const no = this.#refused(argv, name);
      if (no !== undefined) return no;
    }
    const mapping =
      !open &&
      !chained &&
      // reconnecting with its node's breaker open: hot keys from memory (stale-if-error), the rest fails fast
      (client.isReady || ctx.breaker?.isOpenFor(client) === true) &&
      client.isPubSubActive !== true
        ? typeMappingOf(client, options)
        : UNKNOWN;
    const servable = mapping !== UNKNOWN;
    // bulk strings decoded as Buffers: hot keys' values from the cache as Buffers (buffer-reads.ts)
    const inBuffers = servable && buffersFor(mapping);
    // a GET the read path takes may be held till the end of the job (held-reads.ts); any other
    // command sends what is held first, so the connection sees the plain client's order
    const holdable = name === 'get' && argv.length === 2 && servable && !inBuffers;
    if (!holdable) reads.flush(self);
    if (!open && !chained) {
      // shards, coalescing; a sharded key's GET (a read: no order to keep with held reads) sums its shards
      const routed = routeWriteHot(ctx.writeHot, argv, options, client._commandOptions, name);
      if (routed !== undefined) return routed;
    }
    if (holdable)
      return reads.read(client, this.send, commandOf(argv, options, name), 'get', ctx.breaker?.nodeOf(client));
    return this.#sendOther(client, self, argv, options, name, servable, inBuffers);
  }

  /** `sendCommand` past the read path's GETs: other GETs, SELECT, writes, MGET, hash reads, the rest. */
  #sendOther(
    client: NodeRedisClient,
    self: NodeRedisClient,
    argv: readonly unknown[],
    options: CommandOptions | undefined,
    name: string,
    servable: boolean,
    inBuffers: boolean,
  ): unknown {
    const ctx = this.#ctx;
    if (name === 'get') {
      if (inBuffers && argv.length === 2) return this.#buffers.get(client, argv, options);
      const key = keyName(argv[1]);
      if (key !== undefined) ctx.hk.track(key);
      return this.#method('sendCommand').call(client, argv, options);
    }
    if (name === 'select') {
      const before = ctx.dbOf(self);
      const db = Number(String(argv[1]));
      if (Number.isSafeInteger(db)) ctx.setDb(self, db); // the commands after it go there
      const sent = this.#method('sendCommand').call(client, argv, options) as Promise<unknown>;
      sent.catch(() => ctx.setDb(self, before));
      return sent;
    }
    if (WRITES.has(name) || KEYSPACE_WRITES.has(name) || name === 'exec' || name === 'multi' || name === 'discard') {
      const command = commandOf(argv, options);
      ctx.writes.note(self, command, name, undefined);
      return this.send.call(client, command);
    }
    if (name === 'mget' && argv.length > 1 && servable) {
      const answered = this.#multiGet(client, argv, options, inBuffers);
      if (answered !== undefined) return answered;
    }
    if (HASH_READS.has(name) && servable) {
      const answered = this.#hashes.read(client, argv, options, name);
      if (answered !== undefined) return answered;
    }
    if (READ_NAMES.has(name)) {
      ctx.tracking?.reading(); // a read of keys: this client's tracking connections are wanted
      this.#countReads(argv);
    }
    return this.#method('sendCommand').call(client, argv, options);
  }

  /**
   * An MGET with hot keys: each hot key through the read path (answered locally when cached, as
   * Buffers with `inBuffers`), the others in one MGET, the replies put back in order. A hot key
   * the cache cannot answer as MGET would (a value it cannot give as Buffers, a hash: GET fails
   * where MGET says null) is asked again in one late MGET of the caller's. Without a hot key:
   * undefined (sent as is).
   */
  #multiGet(
    self: NodeRedisClient,
    argv: readonly unknown[],
    options: CommandOptions | undefined,
    inBuffers: boolean,
  ): unknown {
    const { hk, reads } = this.#ctx;
    const keys = argv.slice(1);
    const hot = keys.map((arg) => {
      const key = keyName(arg);
      return key !== undefined && hk.isHot(key);
    });
    if (!hot.includes(true)) return undefined;
    this.#ctx.tracking?.reading();
    const cold = keys.filter((_, i) => !hot[i]);
    this.#countReads([argv[0], ...cold]);
    const coldReplies =
      cold.length === 0 ? Promise.resolve([]) : this.#method('sendCommand').call(self, [argv[0], ...cold], options);
    const hotReplies = keys.map((key, i) =>
      hot[i] ? cachedRead(reads, this.send, self, ['GET', key], options, 'get', inBuffers) : undefined,
    );
    const sendPlain = this.#sendPlain;
    return Promise.all([coldReplies, ...hotReplies]).then(([fromRedis, ...local]) => {
      let next = 0;
      const replies = keys.map((_, i) => (hot[i] ? local[i] : (fromRedis as unknown[])[next++]));
      const again = keys.filter((_, i) => replies[i] === ASK_REDIS);
      if (again.length === 0) return replies;
      return sendPlain(self, [argv[0], ...again], options).then((late) => {
        let j = 0;
        return replies.map((reply) => (reply === ASK_REDIS ? (late as unknown[])[j++] : reply));
      });
    });
  }

  /** reads not answered locally still count towards detection */
  #countReads(argv: readonly unknown[]): void {
    const hk = this.#ctx.hk;
    for (const arg of keysOf(argv) ?? []) {
      const key = keyName(arg);
      if (key !== undefined) hk.track(key);
    }
  }

  /** A batch's writes settle with the batch, after their invalidation (one "stream" per batch). */
  batch(client: NodeRedisClient, method: string, commands: Queued, selectedDb: unknown, rest: unknown[]): unknown {
    const { reads, writes } = this.#ctx;
    const self = client._self ?? client;
    reads.flush(self);
    const run = () => this.#method(method).call(client, commands, selectedDb, ...rest) as Promise<unknown>;
    const stream = {};
    for (const { args } of commands) {
      const name = lowerName(args[0]);
      if (WRITES.has(name) || KEYSPACE_WRITES.has(name)) {
        const command = commandOf(args);
        command.inTransaction = true;
        writes.note(self, command, name, stream);
      } else if (READ_NAMES.has(name)) this.#countReads(args);
    }
    const exec = commandOf(['EXEC']);
    writes.note(self, exec, 'exec', stream);
    run().then(
      (replies) => {
        if (typeof selectedDb === 'number') this.#ctx.setDb(self, selectedDb);
        exec.resolve(replies);
      },
      (error: Error) => exec.reject(error),
    );
    return exec.promise;
  }

  /** Places the hook: a prototype of its methods between the client and `base`. */
  install(): void {
    const hook = this;
    const { reads } = this.#ctx;
    const base = this.#base;
    const real = this.#real;
    const value = (fn: unknown): PropertyDescriptor => ({ value: fn, writable: true, configurable: true });
    const closing = closeHooks(() => this.#ctx.writeHot, base, false);
    const hooked = Object.create(base, {
      sendCommand: value(function sendCommand(
        this: NodeRedisClient,
        argv: readonly unknown[],
        options?: CommandOptions,
      ) {
        return hook.sendCommand(this, argv, options);
      }),
      _executeMulti: value(function _executeMulti(
        this: NodeRedisClient,
        commands: Queued,
        db?: unknown,
        ...rest: unknown[]
      ) {
        return hook.batch(this, '_executeMulti', commands, db, rest);
      }),
      _executePipeline: value(function _executePipeline(
        this: NodeRedisClient,
        commands: Queued,
        db?: unknown,
        ...rest: unknown[]
      ) {
        return hook.batch(this, '_executePipeline', commands, db, rest);
      }),
      duplicate: value(function duplicate(this: NodeRedisClient, ...args: unknown[]) {
        return hook.#rewrap(hook.#method('duplicate').apply(this, args) as object);
      }),
      ...(typeof base.createPool === 'function'
        ? {
            createPool: value(function createPool(this: NodeRedisClient, ...args: unknown[]) {
              return hook.#rewrap(hook.#method('createPool').apply(this, args) as object);
            }),
          }
        : {}),
      ...closing,
      // over the close hooks: what is held is sent first, then the merged increments
      ...flushingMethods(Object.create(base, closing) as Proto, (client) => reads.flush(client as NodeRedisClient)),
      [HOOK]: { value: this.#ctx },
    }) as Proto;
    Object.setPrototypeOf(real, hooked);
    if (Object.getPrototypeOf(real) !== hooked)
      throw new TypeError('withHotKeys: the client refused the hook (a Proxy or an exotic object?)');
    pointAliases(real, base, hooked);
  }
}
