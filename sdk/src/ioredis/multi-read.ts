/**
 * Multi-key reads, Buffer replies and reads inside a `pipeline()` for the ioredis wrapper: the
 * hot keys of an MGET / HMGET, of `getBuffer`-style commands and of a pipeline's reads are answered
 * through the wrapper's own hot read of one key (the path a plain GET / HGETALL takes: cache hit,
 * single-flight tracked load, namespace, TTL and tracking-session checks, replica keys), and the
 * rest goes to Redis in ONE command, the replies merged back in the caller's order. The model is
 * rueidis's `DoMultiCache` (github.com/redis/rueidis): cached keys of an MGET are served locally,
 * only the others are asked for.
 *
 * Rules, each so that a reply is never one a plain client could not have had:
 * - Decided synchronously, in call order: which keys are cold (sent now, in the misses command) is
 *   known when the command is dispatched, so a command behind it on the connection never
 *   overtakes the misses. A hot key is read through the one-key path: a hit costs no command, a
 *   hot key not cached yet is loaded as a GET of it would be (shared with concurrent GETs), never
 *   filled from the caller's MGET (whose reply carries no PTTL and no tracking).
 * - A key the one-key path cannot answer as MGET would (a hash under MGET: WRONGTYPE from GET, an
 *   error, a value a Buffer caller cannot be given exactly) is asked again in one late command of
 *   the caller's kind: Redis answers it, never a guess.
 * - Buffer replies: values are cached as UTF-8 strings; a Buffer caller gets a Buffer of the
 *   string only when it is exactly Redis's bytes (redis/read/byte-replies.ts), otherwise Redis answers.
 * - MULTI is never answered here (its commands carry `inTransaction`, or a `multi({ pipeline:
 *   false })` is open on the connection): its reads must see the transaction's snapshot.
 * - In a pipeline, a read of a key an earlier command of the same pipeline wrote (or after a
 *   SELECT, FLUSHDB, FLUSHALL or SWAPDB in it) goes in the pipeline, so it sees that write; the
 *   other reads of hot keys are answered apart and their slot in the pipeline's batched write is
 *   released (`stream.write('')`), so `exec()` keeps its order and `[err, value]` shape. The
 *   commands that go on the wire are numbered as that shorter pipeline (ioredis's
 *   `pipelineIndex`): when the connection drops, ioredis resends a pipeline none of whose replies
 *   came and aborts one cut in the middle, and tells them apart by that number; one answered
 *   apart is no part of it (sent later, it goes on its own).
 * - A Cluster MGET whose keys span slots is sent as is: Redis rejects it with CROSSSLOT, as for a
 *   plain client. Sharded counters (write-hot.ts) inside an MGET are summed as their GET is.
 * - Rate limits: a command on its own took its token (first key) before it got here, as any
 *   command does; its hot keys take none again. Pipelines take none, as before.
 */
import type { HotKeyClient } from '../client/client.ts';
import { KEYSPACE_WRITES, WRITES } from '../redis/command-table.ts';
import type { Client, RedisCommand, RedisCommandCtor } from './command.ts';
import { asBytes, REPLACEMENT } from '../redis/read/byte-replies.ts';
import { flatHash, pickFields, type CachedHash } from '../redis/read/hash-replies.ts';
import { keyName } from '../redis/identity.ts';
import { hashSlot } from '../redis/hash-slots.ts';

/** What the wrapper lends this module: its one-key hot read, its own sends, and its routing of sharded counters. */
export interface MultiReadContext {
  hk: HotKeyClient;
  isCluster: boolean;
  /** the client can answer reads at all (not ended, not a subscriber connection) */
  servable(client: Client): boolean;
  /**
   * the wrapper's GET method (its fast path: a hit builds no Command), called with the key as the
   * caller names it (without the client's keyPrefix)
   */
  get(client: Client, key: string): Promise<unknown>;
  /** the wrapper's hot read of one key (`get`, `hget`, `hgetall`, UTF-8 reply): settles `command` */
  read(client: Client, command: RedisCommand): void;
  /**
   * sends a command of ours (or the caller's, late) past the hook: on its own through the circuit
   * breaker, or in the caller's pipeline (`stream`, `node`: what ioredis gave the hook)
   */
  send(client: Client, command: RedisCommand, stream?: unknown, node?: unknown): void;
  /** whether `key` is a sharded counter here (write-hot.ts): its GET sums the shards */
  sharded(key: string): boolean;
  /** a sharded counter's GET: its sum, or undefined when the key is not routed (write-hot.ts) */
  sum(client: Client, command: RedisCommand): Promise<unknown> | undefined;
}

/** ioredis's command, with its place in its pipeline (0 for the first; absent outside one) */
type PipelinedCommand = RedisCommand & { pipelineIndex?: number };

/** What a pipeline's earlier commands wrote: reads of these keys stay in the pipeline. */
interface Written {
  keys: Set<string>;
  /** a SELECT, a flush, or a write whose keys are unknown: every later read stays in the pipeline */
  all: boolean;
}

/** Commands after which no read of the same pipeline may be answered apart. */
const CHANGES_EVERYTHING: ReadonlySet<string> = new Set([...KEYSPACE_WRITES, 'select', 'multi', 'exec', 'discard']);

/** The reads this module answers; `get`, `hget`, `hgetall` with a UTF-8 reply on their own are the wrapper's. */
const SINGLE = new Set(['get', 'hget', 'hgetall']);
const MULTI_KEY = new Set(['mget', 'hmget']);

/** A value given back to a caller that asked for `encoding`; undefined: the cached string cannot say it exactly. */
function asReply(value: unknown, encoding: string | null): unknown {
  return encoding === 'utf8' ? value : asBytes(value);
}

export class MultiRead {
  readonly #ctx: MultiReadContext;
  readonly #written = new WeakMap<object, Written>();
  /** per pipeline, how many of its commands so far were answered apart */
  readonly #apart = new WeakMap<object, number>();
  /** commands numbered already (ioredis resends one after a reconnect: it passes here again) */
  readonly #numbered = new WeakSet<object>();

  constructor(ctx: MultiReadContext) {
    this.#ctx = ctx;
  }

  /**
   * Takes `command` when this module answers it: returns its promise; undefined: the wrapper goes
   * on as usual. `name` is its lower-case name; `stream` ioredis's pipeline stream, if any;
   * `transaction`: a `multi({ pipeline: false })` is open on the client.
   */
  dispatch(
    client: Client,
    command: RedisCommand,
    name: string,
    stream: unknown,
    node: unknown,
    transaction: boolean,
  ): unknown {
    if (stream === undefined) return this.#take(client, command, name, undefined, node, transaction);
    if (typeof stream !== 'object' || stream === null || !(stream as { isPipeline?: unknown }).isPipeline)
      return undefined;
    const taken = this.#take(client, command, name, stream, node, transaction);
    if (taken === undefined) this.#number(stream, command); // it goes in the pipeline, as it is
    return taken;
  }

  /**
   * Called for every command ioredis hands the hook with a `stream`, before anything else. After a
   * reconnect ioredis resends an intact pipeline's commands on its stream, which flushes once as
   * many writes as the pipeline has commands came in: the first one resent (numbered 0) writes
   * the slots of those answered apart again, empty.
   */
  resending(command: RedisCommand, stream: unknown): void {
    if ((command as PipelinedCommand).pipelineIndex !== 0 || !this.#numbered.has(command)) return;
    const apart = this.#apart.get(stream as object) ?? 0;
    for (let i = 0; i < apart; i++) (stream as { write: (data: string) => void }).write('');
  }

  /** `dispatch` past the pipeline's checks: `stream` is a pipeline's, or undefined. */
  #take(
    client: Client,
    command: RedisCommand,
    name: string,
    stream: object | undefined,
    node: unknown,
    transaction: boolean,
  ): unknown {
    const inPipeline = stream !== undefined;
    if (inPipeline && (!this.#note(stream, command, name) || command.inTransaction === true)) return undefined;
    if (transaction) return undefined;
    const multiKey = MULTI_KEY.has(name);
    if (!multiKey && !SINGLE.has(name)) return undefined;
    const encoding = command.replyEncoding;
    if (encoding !== 'utf8' && encoding !== null) return undefined; // another encoding: Redis converts it
    // a one-key read with a UTF-8 reply on its own is the wrapper's (its fast path)
    if (!multiKey && encoding === 'utf8' && !inPipeline) return undefined;
    // with enableAutoPipelining a GET in a pipeline may be the wrapper's own load of the key,
    // batched after the hook let it pass: waiting on that load would wait on itself (the GET
    // method answers hot keys before ioredis batches them)
    if (inPipeline && name === 'get' && encoding === 'utf8' && client.options.enableAutoPipelining === true)
      return undefined;
    if (!this.#ctx.servable(client)) return undefined;
    if (inPipeline && !this.#canRelease(client, stream)) return undefined;
    if (name === 'mget') return this.#mget(client, command, encoding, stream, node);
    return this.#oneKey(client, command, name, encoding, stream);
  }

  /**
   * Notes what a pipeline's command writes; false when `command` itself may not be answered
   * apart (one of its keys was written earlier in the pipeline, or everything was).
   */
  #note(stream: object, command: RedisCommand, name: string): boolean {
    let written = this.#written.get(stream);
    if (CHANGES_EVERYTHING.has(name)) {
      this.#written.set(stream, { keys: written?.keys ?? new Set(), all: true });
      return false;
    }
    if (written?.all === true) return false;
    if (WRITES.has(name) && command.isReadOnly !== true) {
      if (written === undefined) this.#written.set(stream, (written = { keys: new Set(), all: false }));
      try {
        for (const arg of command.getKeys()) {
          const key = keyName(arg);
          if (key === undefined) written.all = true;
          else written.keys.add(key);
        }
      } catch {
        written.all = true;
      }
      return false;
    }
    if (written === undefined || written.keys.size === 0) return true;
    try {
      for (const arg of command.getKeys()) {
        const key = keyName(arg);
        if (key === undefined || written.keys.has(key)) return false;
      }
    } catch {
      return false;
    }
    return true;
  }

  /**
   * A pipeline flushes its batched write when every command wrote its part: one answered apart
   * writes an empty one. Only while the pipeline's socket is there (else the flush would fail).
   */
  #canRelease(client: Client, stream: object): boolean {
    const destination = (stream as { destination?: { redis?: { stream?: unknown } } }).destination;
    return (
      client.status === 'ready' && typeof (destination?.redis?.stream as { write?: unknown })?.write === 'function'
    );
  }

  /**
   * Runs `fn` now, or for a pipeline's command once the pipeline's batch is written (the exec
   * loop is synchronous): a command the one-key path sends on its own must not reach the socket
   * ahead of the batch's commands queued before it, whose replies ioredis matches in order.
   */
  #later<T>(stream: unknown, fn: () => T): Promise<Awaited<T>> {
    if (stream === undefined) return Promise.resolve(fn());
    return Promise.resolve().then(fn) as Promise<Awaited<T>>;
  }

  /** `command`, answered apart, leaves the pipeline's batched write: its slot is written empty. */
  #release(stream: object | undefined, command: RedisCommand): void {
    if (stream === undefined) return;
    (stream as { write: (data: string) => void }).write('');
    this.#apart.set(stream, (this.#apart.get(stream) ?? 0) + 1);
    (command as PipelinedCommand).pipelineIndex = undefined;
    this.#numbered.add(command);
  }

  /** `sent` goes on the wire in the pipeline, in the place of `command` (itself, or our command for it). */
  #number(stream: object, command: RedisCommand, sent: RedisCommand = command): void {
    if (this.#numbered.has(sent)) return;
    this.#numbered.add(sent);
    const index = (command as PipelinedCommand).pipelineIndex;
    if (typeof index === 'number') (sent as PipelinedCommand).pipelineIndex = index - (this.#apart.get(stream) ?? 0);
  }

  #mget(
    client: Client,
    command: RedisCommand,
    encoding: string | null,
    stream: object | undefined,
    node: unknown,
  ): unknown {
    const { hk } = this.#ctx;
    const args = command.args;
    if (args.length === 0) return undefined; // Redis says what is wrong
    if (this.#ctx.isCluster && !sameSlot(args)) return undefined; // CROSSSLOT, from Redis
    const Ctor = command.constructor as unknown as RedisCommandCtor;
    const local: (Promise<unknown> | undefined)[] = new Array(args.length);
    const misses: number[] = [];
    for (let i = 0; i < args.length; i++) {
      const key = keyName(args[i]);
      if (key === undefined) misses.push(i);
      else if (!hk.isHot(key)) {
        hk.track(key);
        misses.push(i);
      } else local[i] = this.#later(stream, () => this.#getOne(client, Ctor, args[i], key));
    }
    if (misses.length === args.length) return undefined; // all cold: the caller's command goes as is
    let sent: Promise<unknown> = Promise.resolve([]);
    if (misses.length > 0) {
      // in the pipeline's place, if in one
      const miss = new Ctor(
        'mget',
        misses.map((i) => args[i]),
        { replyEncoding: encoding },
      );
      if (stream !== undefined) {
        this.#number(stream, command, miss);
        (command as PipelinedCommand).pipelineIndex = undefined; // answered by `miss` and apart, never sent
        this.#numbered.add(command);
      }
      this.#ctx.send(client, miss, stream, node);
      sent = miss.promise;
    } else this.#release(stream, command);
    Promise.all([sent, Promise.all(local.map((p) => p?.then(ok, failed)))])
      .then(async ([missed, answers]) => {
        const out: unknown[] = new Array(args.length);
        misses.forEach((at, j) => {
          out[at] = (missed as unknown[])[j];
        });
        const again: number[] = [];
        for (let i = 0; i < args.length; i++) {
          const answer = answers[i];
          if (answer === undefined) continue;
          const value = answer.ok ? asReply(answer.value, encoding) : undefined;
          if (value === undefined) again.push(i);
          else out[i] = value;
        }
        if (again.length > 0) {
          const late = new Ctor(
            'mget',
            again.map((i) => args[i]),
            { replyEncoding: encoding },
          );
          this.#ctx.send(client, late);
          const values = (await late.promise) as unknown[];
          again.forEach((at, j) => {
            out[at] = values[j];
          });
        }
        command.resolve(out);
      })
      .catch((error: Error) => command.reject(error));
    return command.promise;
  }

  /** A hot key's GET through the wrapper's one-key path (or a sharded counter's sum). */
  #getOne(client: Client, Ctor: RedisCommandCtor, arg: unknown, key: string): Promise<unknown> {
    // the GET method, unless a rate limit would take a token again or the prefix is not a string
    const prefix = client.options.keyPrefix;
    if (
      !this.#ctx.hk.limiting &&
      typeof arg === 'string' &&
      (prefix === undefined || (typeof prefix === 'string' && arg.startsWith(prefix)))
    )
      return this.#ctx.get(client, prefix ? arg.slice(prefix.length) : arg);
    const get = new Ctor('get', [arg], { replyEncoding: 'utf8' });
    const sum = this.#ctx.sharded(key) ? this.#ctx.sum(client, get) : undefined;
    if (sum !== undefined) return sum;
    this.#ctx.read(client, get);
    return get.promise;
  }

  /** GET / HGET / HGETALL with a Buffer reply, HMGET (either reply), or a one-key read inside a pipeline. */
  #oneKey(
    client: Client,
    command: RedisCommand,
    name: string,
    encoding: string | null,
    stream: object | undefined,
  ): unknown {
    const { hk } = this.#ctx;
    const arity = name === 'hget' ? 2 : name === 'hmget' ? command.args.length : 1;
    const key = keyName(command.args[0]);
    if (key === undefined || command.args.length !== arity || arity === 0) return undefined;
    if (name === 'hmget' && arity < 2) return undefined;
    if (!hk.isHot(key)) {
      hk.track(key);
      return undefined; // sent as is (in the pipeline, if in one)
    }
    const Ctor = command.constructor as unknown as RedisCommandCtor;
    if (name === 'get') {
      const sharded = this.#ctx.sharded(key);
      if (sharded && stream !== undefined) return undefined; // a pipeline's GET reads the key as it is (write-hot.ts)
      this.#release(stream, command);
      const sum = sharded
        ? this.#ctx.sum(client, new Ctor('get', [command.args[0]], { replyEncoding: 'utf8' }))
        : undefined;
      if (encoding === 'utf8') {
        void this.#later(stream, () => this.#ctx.read(client, command)); // the wrapper's own path
        return command.promise;
      }
      const value = sum ?? this.#later(stream, () => this.#readAs(client, Ctor, 'get', command.args[0]));
      this.#answer(client, command, value, (v) => asReply(v, encoding));
      return command.promise;
    }
    this.#release(stream, command);
    if (encoding === 'utf8' && name !== 'hmget') {
      void this.#later(stream, () => this.#ctx.read(client, command));
      return command.promise;
    }
    // a hot hash is cached whole: HGET, HMGET and HGETALL answer from it
    const whole = this.#later(stream, () => this.#readAs(client, Ctor, 'hgetall', command.args[0]));
    const fields = command.args.slice(1).map(String);
    this.#answer(client, command, whole, (value) => {
      if (typeof value !== 'object' || value === null) return undefined;
      const hash = value as CachedHash;
      if (name === 'hgetall') return hashReply(hash, encoding);
      const picked = pickFields(hash, fields, (v) => asReply(v, encoding));
      return name === 'hget' ? picked?.[0] : picked;
    });
    return command.promise;
  }

  #readAs(client: Client, Ctor: RedisCommandCtor, name: 'get' | 'hgetall', arg: unknown): Promise<unknown> {
    const read = new Ctor(name, [arg], { replyEncoding: 'utf8' });
    this.#ctx.read(client, read);
    return read.promise;
  }

  /** Settles `command` with `shape(value)`; a value it cannot shape, or a failed read: the command itself goes to Redis. */
  #answer(client: Client, command: RedisCommand, value: Promise<unknown>, shape: (value: unknown) => unknown): void {
    value.then(
      (v) => {
        const reply = shape(v);
        if (reply === undefined) this.#ctx.send(client, command);
        else command.resolve(reply);
      },
      () => this.#ctx.send(client, command),
    );
  }
}

type Answer = { ok: true; value: unknown } | { ok: false };
const ok = (value: unknown): Answer => ({ ok: true, value });
const failed = (): Answer => ({ ok: false });

/**
 * HGETALL's reply as Redis sends it, flat (`[field, value, …]`): ioredis's reply transformer
 * builds the object from it as it does from Redis's. For a Buffer caller the values become
 * Buffers; a field name that was no UTF-8 cannot be given back exactly (Redis answers).
 */
function hashReply(hash: CachedHash, encoding: string | null): unknown {
  for (const field of Object.keys(hash)) if (field.includes(REPLACEMENT)) return undefined;
  return flatHash(hash, (value) => asReply(value, encoding));
}

function sameSlot(args: readonly unknown[]): boolean {
  let slot = -1;
  for (const arg of args) {
    if (typeof arg !== 'string' && !(arg instanceof Uint8Array)) return false;
    const s = hashSlot(arg);
    if (slot === -1) slot = s;
    else if (s !== slot) return false;
  }
  return true;
}
