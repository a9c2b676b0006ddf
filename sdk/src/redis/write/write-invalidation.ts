/**
 * Write invalidation, for every adapter: a write settles (promise and callback alike) once
 * the keys it wrote, or the namespaces it flushed, were invalidated cluster-wide (or at once with
 * `awaitInvalidation: false`). What a transaction writes is invalidated when its EXEC replies,
 * not when QUEUED comes back: per pipeline write stream for `multi()`, per client for
 * `multi({ pipeline: false })` (MULTI sent at once), while which no read is answered locally.
 * A failed write may still have written (a script, EXEC): its keys are dropped too.
 */
import type { HotKeyClient } from '../../client/client.ts';
import { KEYSPACE_WRITES, WRITES } from '../command-table.ts';
import { dispatched, type RedisCommand } from '../command.ts';
import { keyName } from '../identity.ts';
import type { UpdateWrites } from './update-writes.ts';
import { MAX_KEY_LENGTH } from '../../wire/protocol.ts';
import { unackedWrite } from './unacked-write.ts';

/** The wrapped client, opaque to the core (the key of its open transaction, the adapter's `namespaceOf`). */
type Client = object;

/** Replica keys (replicas.ts), as write invalidation uses them. */
export interface ReplicaWrites {
  /** deletes the copies of written hot keys once every instance applied their invalidation */
  written(keys: string[]): Promise<void>;
}

/** What a transaction writes: keys, and namespaces flushed (FLUSHDB, FLUSHALL, SWAPDB). */
interface Written {
  keys: Set<string>;
  flushed: Set<string>;
}
/** Written inside a MULTI, per pipeline write stream, invalidated when its EXEC replies. */
const transactionKeys = new WeakMap<object, Written>();
/**
 * Written inside a `multi({ pipeline: false })` (MULTI sent at once, commands QUEUED one by one),
 * per client: invalidated when its EXEC replies. While one is open no read is answered locally.
 */
const openTransactions = new WeakMap<object, Written>();

/** Whether a `multi({ pipeline: false })` is open on `client`. */
export function inOpenTransaction(client: object): boolean {
  return openTransactions.has(client);
}

export interface WriteContext {
  hk: HotKeyClient;
  isCluster: boolean;
  /** the client's deployment (identity.ts), the name of what FLUSHALL or a Cluster's FLUSHDB empties */
  deployment: string;
  namespaceOf(client: Client): string;
  awaitInvalidation: boolean;
  onInvalidateError: (error: unknown, key: string) => void;
  /** value push of writes (writes: 'update') */
  updates: UpdateWrites | undefined;
  replicas: ReplicaWrites | undefined;
  /** the adapter can send commands of its own yet (ioredis's: once it has seen ioredis's Command class) */
  canSend(): boolean;
}

export interface WriteInvalidation {
  /**
   * invalidates keys and flushed namespaces at the hub; failures go to `onInvalidateError`, and
   * the promise resolves to the HK_ERR_UNACKED error the write must reject with, if any
   */
  invalidate(keys: Iterable<string>, flushed?: Iterable<string>): Promise<Error | undefined>;
  /**
   * The bookkeeping of a command passing the hook before it is sent: a write (or a keyspace-wide
   * write) settles after its invalidation, or joins its transaction's; EXEC settles after the
   * transaction's; MULTI and DISCARD open and close a `multi({ pipeline: false })`.
   */
  note(client: Client, command: RedisCommand, name: string, stream: unknown): void;
}

/** What a write flushes when it flushes nothing: shared, never written to. */
const NONE: ReadonlySet<string> = new Set();
const acknowledged = (): undefined => undefined;

export function writeInvalidation(ctx: WriteContext): WriteInvalidation {
  return new WriteInvalidator(ctx);
}

/**
 * A write through the wrapper costs what it must: one InvalidateRequest per key and its Ack, one
 * promise step for a write of one key; the error text is built only for a write that fails.
 */
class WriteInvalidator implements WriteInvalidation {
  readonly #ctx: WriteContext;

  constructor(ctx: WriteContext) {
    this.#ctx = ctx;
  }

  invalidate(keys: Iterable<string>, flushed: Iterable<string> = NONE): Promise<Error | undefined> {
    const { hk } = this.#ctx;
    const sole = soleKey(keys, flushed);
    if (sole !== undefined)
      return hk
        .invalidate(sole)
        .then(acknowledged, (err: unknown) => unackedWrite([this.#failed(err, sole)], `"${sole}"`));
    const names = [...keys];
    const namespaces = [...flushed];
    return Promise.all([
      ...names.map((key) => hk.invalidate(key).then(acknowledged, (err: unknown) => this.#failed(err, key))),
      ...namespaces.map((ns) => hk.invalidateAll(ns).then(acknowledged, (err: unknown) => this.#failed(err, ns))),
    ]).then((failures) =>
      failures.every((f) => f === undefined)
        ? undefined
        : unackedWrite(failures, [...names, ...namespaces].map((name) => `"${name}"`).join(', ')),
    );
  }

  /** An invalidation of `name` failed: told to `onInvalidateError`; the failure. */
  #failed(err: unknown, name: string): unknown {
    this.#ctx.onInvalidateError(err, name);
    return err ?? new Error('invalidation failed');
  }

  note(client: Client, command: RedisCommand, name: string, stream: unknown): void {
    const writes = WRITES.has(name) && command.isReadOnly !== true;
    if (writes || KEYSPACE_WRITES.has(name)) this.#write(client, command, name, stream, writes);
    else if (name === 'exec') this.#exec(client, command, stream);
    else if (stream === undefined && !this.#ctx.isCluster && name === 'multi') {
      // multi({ pipeline: false }): MULTI goes out now, the commands after it are QUEUED until EXEC
      openTransactions.set(client, { keys: new Set(), flushed: new Set() });
    } else if (stream === undefined && name === 'discard') {
      openTransactions.delete(client);
    }
  }

  /** A write (`keys`: of keys, else keyspace-wide): settles after its invalidation, or joins its transaction's. */
  #write(client: Client, command: RedisCommand, name: string, stream: unknown, keyed: boolean): void {
    const { hk, updates } = this.#ctx;
    dispatched.add(command);
    const keys = keyed ? namesOf(command) : new Set<string>();
    for (const key of keys) hk.track(key, 'write'); // write-hot detection (rules with kind 'write' / 'any')
    const flushed = keyed ? NONE : this.#flushedBy(client, name, command.args);
    // written when EXEC runs, not when QUEUED comes back
    let pending = stream === undefined ? openTransactions.get(client) : undefined;
    if (command.inTransaction === true && typeof stream === 'object' && stream !== null) {
      pending = transactionKeys.get(stream);
      if (pending === undefined) transactionKeys.set(stream, (pending = { keys: new Set(), flushed: new Set() }));
    }
    if (pending !== undefined) {
      for (const key of keys) pending.keys.add(key);
      for (const namespace of flushed) pending.flushed.add(namespace);
      return;
    }
    const [only] = keys;
    const update =
      updates !== undefined && stream === undefined && keys.size === 1 && updates.claims(name, only!)
        ? only
        : undefined;
    this.#settleAfter(command, keys, flushed, update);
  }

  /** EXEC: settles after what its transaction wrote was invalidated. */
  #exec(client: Client, command: RedisCommand, stream: unknown): void {
    const pending =
      typeof stream === 'object' && stream !== null ? transactionKeys.get(stream) : openTransactions.get(client);
    if (pending === undefined) return;
    if (stream === undefined) openTransactions.delete(client);
    else transactionKeys.delete(stream as object);
    dispatched.add(command);
    this.#settleAfter(command, pending.keys, pending.flushed);
  }

  /**
   * The command settles (promise and callback alike) after its keys (and flushed namespaces) were
   * invalidated; `update`: a write whose reply is followed by an update of its key instead.
   */
  #settleAfter(command: RedisCommand, keys: Set<string>, flushed: ReadonlySet<string>, update?: string): void {
    if (keys.size === 0 && flushed.size === 0) return;
    const { awaitInvalidation, replicas, updates } = this.#ctx;
    const resolve = command.resolve;
    const reject = command.reject;
    command.resolve = (value) => {
      const sent =
        update === undefined
          ? this.invalidate(keys, flushed)
          : updates!
              .invalidate(update)
              .then(acknowledged, (err: unknown) => unackedWrite([this.#failed(err, update)], `"${update}"`));
      const done = replicas === undefined ? sent : sent.then((unacked) => this.#dropCopies(keys, unacked));
      // a write whose invalidation no hub acknowledged must not look acknowledged (unacked-write.ts)
      if (awaitInvalidation) void done.then((unacked) => (unacked === undefined ? resolve(value) : reject(unacked)));
      else resolve(value);
      // an adapter may chain on this (node-redis: `.then(resolve, reject)`) and drop what it gets:
      // a rejection is the caller's, through command.promise, never an unhandled one there
      return command.promise.catch(() => undefined);
    };
    // a failed write may still have written (a script, EXEC): drop, but do not delay the error
    command.reject = (error) => {
      void this.invalidate(keys, flushed).then((unacked) => this.#dropCopies(keys, unacked));
      reject(error);
    };
  }

  /** Replica keys of written hot keys go once every instance applied the invalidation (replicas.ts); then `unacked`. */
  #dropCopies(keys: Set<string>, unacked: Error | undefined): Error | undefined | Promise<Error | undefined> {
    const { hk, replicas } = this.#ctx;
    if (replicas === undefined || !this.#ctx.canSend()) return unacked;
    const hot = [...keys].filter((key) => hk.isHot(key));
    return hot.length === 0 ? unacked : replicas.written(hot).then(() => unacked);
  }

  /**
   * The namespaces a FLUSHDB / FLUSHALL / SWAPDB empties or swaps, as `invalidateAll` names them:
   * `host:port/db`, `host:port/*` for every db, the Cluster's name (on a Cluster ioredis sends it
   * to one master: the whole Cluster is named, too much rather than too little).
   */
  #flushedBy(client: Client, name: string, args: unknown[]): Set<string> {
    const { deployment, isCluster, namespaceOf } = this.#ctx;
    // a name for the hub and events only (every instance drops its whole cache): keep it a valid key
    const clip = (ns: string) => (ns.length > MAX_KEY_LENGTH ? `${ns.slice(0, MAX_KEY_LENGTH - 1)}…` : ns);
    if (isCluster) return new Set([clip(deployment)]);
    if (name === 'flushall') return new Set([clip(`${deployment}/*`)]);
    if (name === 'swapdb') return new Set(args.slice(0, 2).map((db) => clip(`${deployment}/${String(db)}`)));
    return new Set([clip(namespaceOf(client))]);
  }
}

function namesOf(command: RedisCommand): Set<string> {
  const names = new Set<string>();
  for (const arg of command.getKeys()) {
    const name = keyName(arg);
    if (name !== undefined) names.add(name);
  }
  return names;
}

/** The one key a write wrote, when it wrote one and flushed nothing (the common write): else undefined. */
function soleKey(keys: Iterable<string>, flushed: Iterable<string>): string | undefined {
  const none = flushed === NONE || (flushed instanceof Set && flushed.size === 0);
  if (!none) return undefined;
  if (keys instanceof Set) return keys.size === 1 ? (keys.values().next().value as string) : undefined;
  return Array.isArray(keys) && keys.length === 1 ? (keys[0] as string) : undefined;
}
