/**
 * What one `withHotKeys` call of the node-redis adapter sets up over the core, shared by every
 * node-redis client it hooks (the client itself; a Cluster's node clients; a pool's clients):
 * key identity, tracking on connections of its own, the hot read path, write invalidation and
 * value push. The hooks (client-hook.ts) map node-redis's dispatch onto it.
 */
import type { HotKeyClient } from '../client/client.ts';
import type { RedisCommand } from '../redis/command.ts';
import { hotReads, type HotReads } from '../redis/read/hot-read.ts';
import { keysOf } from '../redis/key-specs.ts';
import { Replicas, type ReplicaNodes } from '../redis/read/replicas.ts';
import { SharedRecords } from '../redis/read/shared-records.ts';
import {
  Tracking,
  type TrackedClient,
  type TrackingConnection,
  type TrackingRole,
} from '../redis/tracking/tracking.ts';
import { trackedReadBack, UpdateWrites } from '../redis/write/update-writes.ts';
import { writeInvalidation, type WriteInvalidation } from '../redis/write/write-invalidation.ts';
import { WriteHot } from '../redis/write/write-hot.ts';
import { WrapEvents } from '../redis/wrap-events.ts';
import type { OwnSend } from '../redis/write/scripts.ts';
import { commandName } from './command-name.ts';
import type { NodeRedisLike } from './connection.ts';
import { hashReply } from './hash-shapes.ts';
import { nodeRedisBreaker, type NodeRedisBreaker } from './breaker.ts';
import type { ResolvedWrapOptions } from '../redis/wrap-options.ts';

/** A node-redis client as the hooks see it: `this` of its methods (the client or a `withCommandOptions` proxy of it). */
export interface NodeRedisClient extends NodeRedisLike {
  /** the client itself under its proxies (node-redis's own field) */
  readonly _self: NodeRedisClient;
  readonly _commandOptions?: { typeMapping?: object } | undefined;
  readonly isPubSubActive?: boolean;
  readonly options?: { database?: number; socket?: object; clientSideCache?: unknown } | undefined;
  readonly clientSideCache?: unknown;
}

/** node-redis's per-command options (the ones the adapter reads) */
export interface CommandOptions {
  typeMapping?: object;
  chainId?: symbol;
}

/** A core command built from a node-redis argument list: `argv` is sent as given (the caller's case). */
export interface NodeRedisCommand extends RedisCommand {
  argv: readonly unknown[];
  options: CommandOptions | undefined;
}

/** the settling pair of the promise `capture` was last the executor of (taken at once by the constructor) */
const captured: { resolve?: (value: unknown) => void; reject?: (error: Error) => void } = {};
function capture(resolve: (value: unknown) => void, reject: (error: Error) => void): void {
  captured.resolve = resolve;
  captured.reject = reject;
}

/**
 * A command (name first) as the core's `RedisCommand`, settled by whoever sends it. A class, not an object
 * of closures: one is made for every GET the hook takes, and its methods and settling functions
 * are then shared or the promise's own.
 */
class ArgvCommand implements NodeRedisCommand {
  readonly name: string;
  readonly args: unknown[];
  readonly argv: readonly unknown[];
  readonly options: CommandOptions | undefined;
  readonly promise: Promise<unknown>;
  readonly replyEncoding = 'utf8';
  resolve!: (value: unknown) => unknown;
  reject!: (error: Error) => void;

  constructor(argv: readonly unknown[], options: CommandOptions | undefined, name: string | undefined) {
    // one executor for every command (no closure per command): it hands over the settling pair
    this.promise = new Promise<unknown>(capture);
    this.resolve = captured.resolve!;
    this.reject = captured.reject!;
    captured.resolve = captured.reject = undefined;
    this.name = name ?? commandName(argv[0]);
    this.args = argv.slice(1);
    this.argv = argv;
    this.options = options;
  }

  getKeys(): unknown[] {
    return keysOf(this.argv) ?? this.args;
  }
}

/** `name`: the command's name in lower case, when the caller has it already */
export function commandOf(argv: readonly unknown[], options?: CommandOptions, name?: string): NodeRedisCommand {
  return new ArgvCommand(argv, options, name);
}

/**
 * Options for a command of ours beside the caller's (its load, a PTTL, an HGETALL): the caller's
 * own (its chain, `asap`) without any type mapping, never undefined, so that node-redis, which
 * spreads the proxy's or the client's options under them, decodes the reply as plain strings,
 * the form the cache holds.
 */
export function withoutTypeMapping(options: CommandOptions | undefined): CommandOptions {
  return { ...options, typeMapping: undefined };
}

export interface Context {
  readonly hk: HotKeyClient;
  readonly options: ResolvedWrapOptions;
  readonly isCluster: boolean;
  readonly deployment: string;
  readonly tracking: Tracking | undefined;
  readonly reads: HotReads<NodeRedisClient>;
  readonly writes: WriteInvalidation;
  /** shards and coalescing of write-hot keys (redis/write/write-hot.ts) */
  readonly writeHot: WriteHot;
  /** replica keys (redis/read/replicas.ts), undefined when off */
  readonly replicas: Replicas | undefined;
  /** the circuit breaker per node (breaker.ts); undefined with `breaker: false` */
  readonly breaker: NodeRedisBreaker | undefined;
  /** the database of a client's next command (its options', then its last SELECT's) */
  dbOf(client: object): number;
  setDb(client: object, db: number): void;
  namespaceOf(client: object): string;
}

export interface ContextOptions {
  hk: HotKeyClient;
  /** the wrapped client (a standalone client, a Cluster, a pool): whose database update writes read back in */
  client: object;
  /** the `withHotKeys` options, checked, defaults applied (redis/wrap-options.ts) */
  options: ResolvedWrapOptions;
  isCluster: boolean;
  deployment: string;
  /** the wrapped client's readiness, end and (a Cluster's) slot map, for tracking */
  tracked: TrackedClient;
  /** a connection of our own to a node (`host:port`, or 'standalone'), for tracking */
  connect(nodeKey: string, role: TrackingRole): TrackingConnection | undefined;
  /** a client's database before it sent any SELECT */
  initialDb(client: object): number;
  /** the core's own commands on the wrapped client, past the hooks (own-send.ts) */
  ownSend: OwnSend;
  /** the slot map and dispatch replica keys use (replica-nodes.ts) */
  replicaNodes: Omit<ReplicaNodes, 'db'>;
}

/** Each client's database (its options', then its last SELECT's) and the namespace it names. */
function databases(o: ContextOptions, shared: SharedRecords): Pick<Context, 'dbOf' | 'setDb' | 'namespaceOf'> {
  const { isCluster, deployment } = o;
  const dbs = new WeakMap<object, number>();
  const dbOf = (client: object): number => {
    const real = (client as Partial<NodeRedisClient>)._self ?? client;
    let db = dbs.get(real);
    if (db === undefined) dbs.set(real, (db = o.initialDb(real)));
    return db;
  };
  const namespaces = new Map<number, string>();
  const namespaceOf = (client: object): string => {
    if (isCluster) return deployment;
    const db = dbOf(client);
    let ns = namespaces.get(db);
    if (ns === undefined) {
      namespaces.set(db, (ns = `${deployment}/${db}`));
      shared.noteNamespace(ns); // pushed records of it may be injected here
    }
    return ns;
  };
  if (isCluster) shared.noteNamespace(deployment);
  return {
    dbOf,
    setDb: (client, db) => dbs.set((client as Partial<NodeRedisClient>)._self ?? client, db),
    namespaceOf,
  };
}

export function createContext(o: ContextOptions): Context {
  const { hk, options, isCluster, deployment } = o;
  const shared = SharedRecords.of(hk);
  const { dbOf, setDb, namespaceOf } = databases(o, shared);

  const tracking =
    options.tracking === undefined
      ? undefined
      : new Tracking(
          o.tracked,
          hk,
          o.connect,
          options.tracking,
          (key) => {
            replicas?.outsideWrite(key);
            shared.heard(key);
          },
          (session) => shared.ended(session),
        );
  const replicas =
    options.replicas === undefined
      ? undefined
      : new Replicas(
          hk,
          { ...o.replicaNodes, db: () => (isCluster ? undefined : dbOf(o.client)) },
          tracking,
          options.replicas,
        );
  const breaker = nodeRedisBreaker({
    hk,
    settings: options.breaker,
    deployment,
    cluster: isCluster ? o.client : undefined,
    untilEnd: (ended) => o.tracked.once('end', ended),
  });
  const reads = hotReads<NodeRedisClient>({
    hk,
    isCluster,
    tracking,
    replicas,
    namespaceOf,
    dbOf,
    ready: (c) => c.isReady,
    // our own commands (a PTTL, an HGETALL) keep the caller's options but never its type mapping: the core reads plain replies
    command: (like, name, args) =>
      commandOf([name.toUpperCase(), ...args], withoutTypeMapping((like as Partial<NodeRedisCommand>).options)),
    loadBlocked: (key) => breaker?.loadBlocked(key),
    watchLoad: () => {},
    // a cold GET is timed by the breaker's layer as it passes, and heard by the read path's settling functions
    guard: breaker?.guard,
    hashReply,
    connection: (c) => c._self ?? c,
    sameRead: (a, b) => (a as NodeRedisCommand).options === (b as NodeRedisCommand).options,
  });
  const updates =
    options.writes === 'update' && tracking !== undefined
      ? new UpdateWrites(
          hk,
          shared,
          trackedReadBack(tracking, (node, key) => {
            const client = o.client as NodeRedisClient;
            return reads.trackedLoad(node.load.bind(node), 'get', key, client, namespaceOf(client), performance.now());
          }),
        )
      : undefined;
  const writes = writeInvalidation({
    hk,
    isCluster,
    deployment,
    namespaceOf,
    awaitInvalidation: options.awaitInvalidation,
    onInvalidateError: options.onInvalidateError,
    updates,
    replicas,
    canSend: () => true,
  });
  // merged writes invalidate like any write
  const writeHot = new WriteHot(hk, o.ownSend, (key) =>
    options.awaitInvalidation ? writes.invalidate([key]) : Promise.resolve(),
  );
  // promotions, demotions and hk's close reach this wrap's parts while its client is open (one listener per hk)
  WrapEvents.of(hk).follow(o.tracked, [writeHot, tracking, replicas]);
  return {
    hk,
    options,
    isCluster,
    deployment,
    tracking,
    reads,
    writes,
    writeHot,
    replicas,
    breaker,
    dbOf,
    setDb,
    namespaceOf,
  };
}
