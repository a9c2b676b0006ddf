/**
 * Write invalidation, for every adapter: a write settles (promise and callback alike) once
 * the keys it wrote, or the namespaces it flushed, were invalidated cluster-wide (or at once with
 * `awaitInvalidation: false`). What a transaction writes is invalidated when its EXEC replies,
 * not when QUEUED comes back: per pipeline write stream for `multi()`, per client for
 * `multi({ pipeline: false })` (MULTI sent at once), while which no read is answered locally.
 * A failed write may still have written (a script, EXEC): its keys are dropped too.
 */
import type { HotKeyClient } from '../client/client.ts';
import { KEYSPACE_WRITES, WRITES } from './command-table.ts';
import { dispatched, type Cmd } from './command.ts';
import { keyName } from './identity.ts';
import type { UpdateWrites } from './update-writes.ts';
import { MAX_KEY_LENGTH } from '../wire/protocol.ts';
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
  note(client: Client, command: Cmd, name: string, stream: unknown): void;
}

export function writeInvalidation(ctx: WriteContext): WriteInvalidation {
  const { hk, isCluster, deployment, namespaceOf, awaitInvalidation, onInvalidateError, updates, replicas } = ctx;

  /** `done` settled: undefined when acknowledged, else the error (told to `onInvalidateError`). */
  const failureOf = (done: Promise<unknown>, name: string): Promise<unknown> =>
    done.then(
      () => undefined,
      (err: unknown) => {
        onInvalidateError(err, name);
        return err ?? new Error('invalidation failed');
      },
    );

  const invalidate = async (keys: Iterable<string>, flushed: Iterable<string> = []): Promise<Error | undefined> => {
    const names = [...keys, ...flushed];
    const failures = await Promise.all([
      ...Array.from(keys, (key) => failureOf(hk.invalidate(key), key)),
      ...Array.from(flushed, (namespace) => failureOf(hk.invalidateAll(namespace), namespace)),
    ]);
    return unackedWrite(failures, names.map((name) => `"${name}"`).join(', '));
  };

  function note(client: Client, command: Cmd, name: string, stream: unknown): void {
    const open = stream === undefined ? openTransactions.get(client) : undefined;
    const writes = WRITES.has(name) && command.isReadOnly !== true;
    if (writes || KEYSPACE_WRITES.has(name)) {
      dispatched.add(command);
      const keys = writes ? namesOf(command) : new Set<string>();
      for (const key of keys) hk.track(key, 'write'); // write-hot detection (rules with kind 'write' / 'any')
      const flushed = writes ? new Set<string>() : flushedBy(client, name, command.args);
      // written when EXEC runs, not when QUEUED comes back
      let pending = open;
      if (command.inTransaction === true && typeof stream === 'object' && stream !== null) {
        pending = transactionKeys.get(stream);
        if (pending === undefined) transactionKeys.set(stream, (pending = { keys: new Set(), flushed: new Set() }));
      }
      if (pending !== undefined) {
        for (const key of keys) pending.keys.add(key);
        for (const namespace of flushed) pending.flushed.add(namespace);
      } else {
        const [only] = keys;
        const update =
          updates !== undefined && stream === undefined && keys.size === 1 && updates.claims(name, only!)
            ? only
            : undefined;
        settleAfterInvalidation(command, keys, flushed, update);
      }
    } else if (name === 'exec') {
      const pending = typeof stream === 'object' && stream !== null ? transactionKeys.get(stream) : open;
      if (pending !== undefined) {
        if (stream === undefined) openTransactions.delete(client);
        else transactionKeys.delete(stream as object);
        dispatched.add(command);
        settleAfterInvalidation(command, pending.keys, pending.flushed);
      }
    } else if (stream === undefined && !isCluster && name === 'multi') {
      // multi({ pipeline: false }): MULTI goes out now, the commands after it are QUEUED until EXEC
      openTransactions.set(client, { keys: new Set(), flushed: new Set() });
    } else if (stream === undefined && name === 'discard') {
      openTransactions.delete(client);
    }
  }

  function namesOf(command: Cmd): Set<string> {
    const names = new Set<string>();
    for (const arg of command.getKeys()) {
      const name = keyName(arg);
      if (name !== undefined) names.add(name);
    }
    return names;
  }

  /**
   * The command settles (promise and callback alike) after its keys (and flushed namespaces) were
   * invalidated; `update`: a write whose reply is followed by an update of its key instead.
   */
  function settleAfterInvalidation(
    command: Cmd,
    keys: Set<string>,
    flushed: Set<string> = new Set(),
    update?: string,
  ): void {
    if (keys.size === 0 && flushed.size === 0) return;
    const resolve = command.resolve;
    const reject = command.reject;
    command.resolve = (value) => {
      const sent =
        update === undefined
          ? invalidate(keys, flushed)
          : failureOf(updates!.invalidate(update), update).then((err) => unackedWrite([err], `"${update}"`));
      const done = sent.then(async (unacked) => {
        await dropCopies(keys);
        return unacked;
      });
      // a write whose invalidation no hub acknowledged must not look acknowledged (unacked-write.ts)
      if (awaitInvalidation) void done.then((unacked) => (unacked === undefined ? resolve(value) : reject(unacked)));
      else resolve(value);
      // an adapter may chain on this (node-redis: `.then(resolve, reject)`) and drop what it gets:
      // a rejection is the caller's, through command.promise, never an unhandled one there
      return command.promise.catch(() => undefined);
    };
    // a failed write may still have written (a script, EXEC): drop, but do not delay the error
    command.reject = (error) => {
      void invalidate(keys, flushed).then(() => dropCopies(keys));
      reject(error);
    };
  }

  /** Replica keys of written hot keys go once every instance applied the invalidation (replicas.ts). */
  function dropCopies(keys: Set<string>): Promise<void> | undefined {
    if (replicas === undefined || !ctx.canSend()) return undefined;
    const hot = [...keys].filter((key) => hk.isHot(key));
    return hot.length === 0 ? undefined : replicas.written(hot);
  }

  /**
   * The namespaces a FLUSHDB / FLUSHALL / SWAPDB empties or swaps, as `invalidateAll` names them:
   * `host:port/db`, `host:port/*` for every db, the Cluster's name (on a Cluster ioredis sends it
   * to one master: the whole Cluster is named, too much rather than too little).
   */
  function flushedBy(client: Client, name: string, args: unknown[]): Set<string> {
    // a name for the hub and events only (every instance drops its whole cache): keep it a valid key
    const clip = (ns: string) => (ns.length > MAX_KEY_LENGTH ? `${ns.slice(0, MAX_KEY_LENGTH - 1)}…` : ns);
    if (isCluster) return new Set([clip(deployment)]);
    if (name === 'flushall') return new Set([clip(`${deployment}/*`)]);
    if (name === 'swapdb') return new Set(args.slice(0, 2).map((db) => clip(`${deployment}/${String(db)}`)));
    return new Set([clip(namespaceOf(client))]);
  }

  return { invalidate, note };
}
