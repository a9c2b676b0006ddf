/**
 * ioredis adapter: `withHotKeys(client, hk)` hooks a `Redis` or `Cluster` client's command
 * dispatch so that reads of hot keys are answered from hk's local cache and writes invalidate
 * the keys they wrote, cluster-wide. It returns the client itself.
 *
 * Design: every ioredis command — method or callback style, `call()`, `defineCommand` scripts,
 * the offline queue's replay, pipelines and MULTI at `exec()` — becomes a `Command` that passes
 * through `sendCommand(command, stream?, node?)`. The hook is that one method (with `duplicate`,
 * and GET's fast path for hot keys), on a prototype inserted between the client and its class
 * (`client → hooked → Redis.prototype`); `sendCommand` there is an accessor that keeps the hook
 * above other patches of it in any order (layers.ts):
 * - nothing else changes, so built-ins, `instanceof`, `constructor`, `String()`, own-property
 *   enumeration, events and their `this`, `status`, options and chaining (`on()` returns the
 *   client) are the client's own, by construction;
 * - the instance gets no own property; a patch of `sendCommand` on the instance (before or after
 *   wrapping) or on `Redis.prototype` sits under the hook and sees what reaches Redis, never a
 *   loop (layers.ts says which order puts one above);
 * - callback and promise styles share one path, and commands not answered locally are sent
 *   synchronously in call order, so replies keep plain ioredis's order;
 * - `showFriendlyErrorStack` frames are taken by ioredis before dispatch, in the caller's frame.
 *
 * A read of a hot key (GET, HGET, HGETALL with a string reply encoding) is resolved through the
 * Command's own `resolve` without being sent; a hot GET hit builds no Command at all. Concurrent reads of a hot key that is not cached
 * yet are merged into one command (hk's single-flight load): the point of the product.
 * Each command is counted once: the hook marks what it dispatched, and ioredis re-sending a
 * command (offline queue, reconnect, NOSCRIPT) passes straight through.
 */
import type { Cluster, Command, Redis } from 'ioredis';
import type { HotKeyClient } from '../client/client.ts';
import { isRead, KEYSPACE_WRITES, READS, WRITES, type ReadName } from './commands.ts';
import { dbOf, deploymentOf, keyName } from './identity.ts';
import { Tracking, UNTRACKED, type NodeTracker, type TrackingOptions, type TrackingSession } from './tracking.ts';
import { MAX_KEY_LENGTH } from '../wire/protocol.ts';
import { hook, isClosing, unhooked } from './unhooked.ts';
import { WriteHot } from './write-hot.ts';
import { Breakers, exportBreakerMetrics, type BreakerOptions } from './breaker.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import { Replicas, type ReplicaOptions, type ReplicaStats } from './replicas.ts';
import { record, SharedRecords, type Rec } from './shared-records.ts';
import { UpdateWrites } from './update-writes.ts';
import { isEnumerable, layerSendCommand, removeOwnSendCommand } from './layers.ts';
import { MultiRead } from './multi-read.ts';

export interface WithHotKeysOptions {
  /** writes settle (promise and callback) after the hub acknowledged the invalidation cluster-wide @default true */
  awaitInvalidation?: boolean;
  /** hears invalidations that failed after a write (no hub, timeout); the local copy is dropped regardless @default ignore */
  onInvalidateError?: (error: unknown, key: string) => void;
  /**
   * Redis server-assisted tracking of hot keys, so that writes by clients without the SDK drop
   * cached values within milliseconds (tracking.ts): `true`, `false` (a cached value then lives
   * until `cacheTtlMs` or its Redis TTL, whoever writes), or its options @default true
   */
  tracking?: boolean | TrackingOptions;
  /**
   * A circuit breaker per Redis node (breaker.ts): after `failures` consecutive failures or
   * timeouts, commands for the node fail fast with HK_ERR_BREAKER_OPEN for `coolDownMs` (a hot
   * key's load too: the client may then serve its last value), then a probe closes it.
   * `true`, `false` or its options @default true ({ failures: 5, coolDownMs: 3000, timeoutMs: 1000 })
   */
  breaker?: boolean | BreakerOptions;
  /**
   * Replica keys for read-hot keys of rules with `cache: false` (replicas.ts): GETs spread over
   * copies on other Cluster masters, as many as the hub decides. `false` turns them off here
   * @default {} (on, copies live 2 s)
   */
  replicas?: false | ReplicaOptions;
  /**
   * What a write of a hot key whose rule shares values (`share: true`) sends every instance:
   * 'invalidate' (they drop it and reload) or 'update' (Redisson's UPDATE: a `SET`, `SETEX` or
   * `PSETEX` on its own — not in a pipeline or MULTI — is read back with its TTL through this
   * instance's tracking once Redis replied, and the invalidation carries that value: every
   * instance drops the old value and caches the new one in the same step, without a read of its
   * own; this instance vouches for it like a filler, update-writes.ts). Other writes, keys not
   * shared, values over `maxPushBytes`, tracking down: an invalidation, as with 'invalidate'.
   * @default 'invalidate'
   */
  writes?: 'invalidate' | 'update';
}

/** The fields of ioredis's Command the hook reads or replaces (public in JS, partly untyped). */
interface Cmd {
  name: string;
  args: unknown[];
  promise: Promise<unknown>;
  replyEncoding?: string | null;
  inTransaction?: boolean;
  isReadOnly?: boolean;
  getKeys: Command['getKeys'];
  resolve: (value: unknown) => unknown;
  reject: (error: Error) => void;
}
type Client = Redis | Cluster;
type Send = (this: Client, command: Cmd, stream?: unknown, node?: unknown) => unknown;
type CmdCtor = new (name: string, args: unknown[], opts: object) => Cmd;

/** Whether a cached record may still be served: Redis has not expired the key. */
function fresh(rec: Rec): boolean {
  return rec.expiresAt === undefined || performance.now() < rec.expiresAt;
}

/**
 * Whether a cached record may be served: fresh, and with tracking on, read under a session that
 * still lives (else a write we can no longer hear about may have changed it: the caller drops it).
 */
function vouched(rec: Rec): boolean {
  return rec.session === undefined || rec.session.live;
}

/** The record once both replies are in; a failed PTTL only means no TTL cap (the value is good). */
function withTtl(rec: Promise<Rec>, pttl: unknown, askedAt: number): Promise<Rec> {
  return Promise.all([rec, Promise.resolve(pttl).catch(() => -1)]).then(([r, ms]) => {
    if (typeof ms === 'number' && ms >= 0) r.expiresAt = askedAt + ms;
    return record(r);
  });
}

const replicaSets = new WeakMap<object, Replicas>();

/** What a wrapped client's replica keys did (replicas.ts); undefined for a client without them. */
export function replicaStats(client: object): Readonly<ReplicaStats> | undefined {
  return replicaSets.get(client)?.stats;
}

const HOOK: unique symbol = Symbol('hotkey.ioredis');
/** the write-hot modes (write-hot.ts) of a wrapped client, for `hotKeyStats` / `flushWrites` */
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
 * Marks a Command this module already handed to ioredis: re-sends of it (offline queue,
 * reconnect, NOSCRIPT) pass straight through. A symbol property, not a WeakSet: one map
 * transition shared by every Command, so checking and setting it cost a few ns.
 */
const SENT: unique symbol = Symbol('hotkey.sent');
const dispatched = {
  has: (command: object): boolean => (command as { [SENT]?: true })[SENT] === true,
  add: (command: object): void => {
    (command as { [SENT]?: true })[SENT] = true;
  },
};
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

/**
 * Hooks `client` (a `Redis` or a `Redis.Cluster`) in place and returns it: hot reads answered
 * locally, writes invalidated. Wrapping the same client twice with the same `hk` is a no-op;
 * with another `hk` it throws TypeError. `duplicate()` returns a client wrapped the same way.
 */
export function withHotKeys<C extends Client>(client: C, hk: HotKeyClient, options: WithHotKeysOptions = {}): C {
  if (!looksLikeIoredis(client)) {
    throw new TypeError(
      'withHotKeys: client must be an ioredis Redis or Cluster (sendCommand, duplicate, options and status of ioredis)',
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
  if (!Object.isExtensible(client))
    throw new TypeError('withHotKeys: client is frozen, sealed or not extensible: its dispatch cannot be hooked');
  // checked before anything listens or connects: an own sendCommand it cannot move under the hook throws
  const layers = layerSendCommand(client, base, sendCommand as never);
  /** sends past the hook: the user's instance patches, then the class's (maybe patched) method, read at each call */
  const down = layers.down as unknown as Send;
  const deployment = deploymentOf(client);
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

  const invalidate = (keys: Iterable<string>, flushed: Iterable<string> = []): Promise<unknown> =>
    Promise.all([
      ...Array.from(keys, (key) =>
        hk.invalidate(key).catch((err: unknown) => {
          onInvalidateError(err, key);
        }),
      ),
      ...Array.from(flushed, (namespace) =>
        hk.invalidateAll(namespace).catch((err: unknown) => {
          onInvalidateError(err, namespace);
        }),
      ),
    ]);
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
  const sendOwn = (name: string, args: unknown[], replyEncoding: string | null): Promise<unknown> => {
    // the user's client is closing (QUIT sent) or closed: a late write of ours would hit a closing socket (EPIPE)
    if (isClosing(client))
      return Promise.reject(new HotKeyError(ErrorCode.Closed, `${name}: the Redis client is closing`));
    const command = new Ctor!(name, args, { replyEncoding });
    dispatched.add(command);
    void down.call(client, command);
    return command.promise;
  };
  /** value and PTTL of a key in one round trip, through tracking when its node's session is live */
  const readPrimary = (key: string): Promise<{ value: unknown; pttl: unknown }> => {
    const node = tracking?.nodeFor(key);
    const plain = () => Promise.all([sendOwn('get', [key], 'utf8'), sendOwn('pttl', [key], 'utf8')]);
    if (node?.session.live) {
      return node.load('get', key, isCluster ? undefined : dbOf(client)).then(
        (read) => read,
        () => plain().then(([value, pttl]) => ({ value, pttl })),
      );
    }
    return plain().then(([value, pttl]) => ({ value, pttl }));
  };
  const replicas =
    options.replicas === false ? undefined : new Replicas(hk, client, sendOwn, readPrimary, options.replicas ?? {});
  if (replicas !== undefined) replicaSets.set(client, replicas);
  const updates =
    writeMode === 'update' && tracking !== undefined
      ? new UpdateWrites(hk, shared, async (key) => {
          const node = tracking.nodeFor(key);
          if (node?.starting) await node.firstLive(); // a writer that never read the key
          if (!node?.session.live) return undefined;
          return trackedLoad(node.load.bind(node), 'get', key, client, namespaceOf(client), performance.now());
        })
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
  const writeHot = new WriteHot(client, hk, (key) => {
    const done = invalidate([key]);
    return awaitInvalidation ? done : Promise.resolve();
  });

  /**
   * The circuit breaker's word on a command sent on its own: rejected at once (true) while its
   * node's breaker is open, else watched for its outcome. Hot reads (`name`) pass: their loads
   * ask `loadBlocked` instead, so that a rejected load can fall back on the cached value.
   */
  function blocked(command: Cmd, name = ''): boolean {
    if (breakers === undefined || hook.unguarded) return false;
    const node = breakers.nodeOf(command);
    if (node === undefined || (isRead(name) && isHotKey(command.args[0]))) return false;
    if (breakers.isOpen(node)) {
      command.reject(breakers.reject(node));
      return true;
    }
    breakers.watch(node, command);
    return false;
  }
  /** A load of `key` while its node's breaker is open: the error it rejects with at once. */
  function loadBlocked(key: string): Error | undefined {
    const node = breakers?.nodeFor(key);
    return node !== undefined && breakers!.isOpen(node) ? breakers!.reject(node) : undefined;
  }
  /** Watches a command a load sends itself (past the hook). */
  function watchLoad(command: Cmd): void {
    const node = breakers?.nodeOf(command);
    if (node !== undefined) breakers!.watch(node, command);
  }

  /** A hot load on a node whose tracking connections are still being made waits for them: only a tracked record is cached (or pushed). */
  function mayWaitForTracking(node: NodeTracker | undefined): boolean {
    return node?.starting === true;
  }

  /**
   * The GET fast path's load of a hot key whose node's tracking is still connecting: tracked
   * once it is up, else (not up within tracking.ts's TRACKING_WAIT_MS) a plain GET + PTTL of our own (not cached).
   * Apart from get(): its loader closure must stay small (the hot GET's cost).
   */
  function getAfterTracking(node: NodeTracker, key: string, client: Client, args: unknown[], ns: string): Promise<Rec> {
    return node.firstLive().then(() => {
      const askedAt = performance.now();
      if (node.session.live) return trackedLoad(node.load.bind(node), 'get', key, client, ns, askedAt);
      const value = bypassing(client, base.get as (...a: unknown[]) => unknown, args) as Promise<unknown>;
      const ttl = bypassing(client, base.pttl as (...a: unknown[]) => unknown, args);
      const session = UNTRACKED;
      return withTtl(
        value.then((v): Rec => ({ ns, kind: 'string', value: v, expiresAt: undefined, session })),
        ttl,
        askedAt,
      );
    });
  }

  function isHotKey(arg: unknown): boolean {
    const key = keyName(arg);
    return key !== undefined && hk.isHot(key);
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
          : updates!.invalidate(update).catch((err: unknown) => onInvalidateError(err, update));
      const done = sent.then(() => dropCopies(keys));
      if (awaitInvalidation) void done.then(() => resolve(value));
      else resolve(value);
      return command.promise;
    };
    // a failed write may still have written (a script, EXEC): drop, but do not delay the error
    command.reject = (error) => {
      void invalidate(keys, flushed).then(() => dropCopies(keys));
      reject(error);
    };
  }

  /** Replica keys of written hot keys go once every instance applied the invalidation (replicas.ts). */
  function dropCopies(keys: Set<string>): Promise<void> | undefined {
    if (replicas === undefined || Ctor === undefined) return undefined;
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

  function read(client: Client, send: Send, command: Cmd, name: ReadName): unknown {
    const key = keyName(command.args[0]);
    const arity = name === 'hget' ? 2 : 1;
    if (key === undefined || command.args.length !== arity) return send.call(client, command);
    if (!hk.isHot(key)) {
      // cold, the common case: counted, sent as is (no promise of ours in between)
      hk.track(key);
      return send.call(client, command);
    }
    if (replicas !== undefined && name === 'get' && command.replyEncoding === 'utf8') {
      const copies = replicas.copies(key);
      if (copies > 1) {
        hk.track(key);
        replicas.read(key, command, copies);
        return command.promise;
      }
    }
    const ns = namespaceOf(client);
    const field = name === 'hget' ? String(command.args[1]) : undefined;
    let sent = false;
    let returned: unknown;
    const Ctor = command.constructor as new (name: string, args: unknown[], opts: object) => Cmd;
    /** PTTL of the key, sent right behind the read: same connection, same round trip */
    const pttl = (): Promise<unknown> => {
      const ttl = new Ctor('pttl', [command.args[0]], { replyEncoding: 'utf8' });
      dispatched.add(ttl);
      void send.call(client, ttl);
      return ttl.promise;
    };
    let waited = false;
    const loader = (): Promise<Rec> => {
      const refused = loadBlocked(key);
      if (refused !== undefined) return Promise.reject(refused);
      const askedAt = performance.now();
      const hashWhole = name !== 'hget' || hk.isHot(key);
      const node = hashWhole ? tracking?.nodeFor(key) : undefined;
      if (!waited && mayWaitForTracking(node)) {
        waited = true;
        return node!.firstLive().then(loader);
      }
      if (node?.session.live)
        return trackedLoad(node.load.bind(node), name === 'get' ? 'get' : 'hgetall', key, client, ns, askedAt);
      const session = tracking === undefined ? undefined : UNTRACKED;
      if (name === 'hget' && hashWhole) {
        // a hot hash is loaded once, whole, for every field
        const all = new Ctor('hgetall', [command.args[0]], { replyEncoding: 'utf8' });
        dispatched.add(all);
        watchLoad(all);
        void send.call(client, all);
        const rec = all.promise.then(
          (value): Rec => ({
            ns,
            kind: 'hash',
            value: Object.freeze(value as Record<string, unknown>),
            expiresAt: undefined,
            session,
          }),
        );
        return withTtl(rec, pttl(), askedAt);
      }
      sent = true;
      watchLoad(command);
      returned = send.call(client, command);
      const kind = name === 'hget' ? 'field' : READS[name];
      const rec = command.promise.then((value) => ({ ns, kind, value, expiresAt: undefined, session }) as Rec);
      return withTtl(rec, pttl(), askedAt);
    };
    hk.get(key, loader).then(
      (rec) => {
        if (sent) return; // this very command went to Redis and settles itself
        if (!vouched(rec))
          hk.dropLocal(key); // the next read loads it again (tracked, once tracking is back)
        else if (rec.ns === ns && fresh(rec)) {
          if (name === 'get' && rec.kind === 'string') return void command.resolve(rec.value);
          if (name === 'hgetall' && rec.kind === 'hash') return void command.resolve(rec.value);
          if (name === 'hget' && rec.kind === 'hash')
            return void command.resolve(Object.hasOwn(rec.value, field!) ? rec.value[field!] : null);
        }
        void send.call(client, command); // another namespace's, another shape's or an expired entry: ask Redis
      },
      () => {
        if (!sent) void send.call(client, command); // a shared load failed: this read tries itself
      },
    );
    return sent ? returned : command.promise;
  }

  /** A load through the node's tracking connections (value, PTTL, opt-in: one round trip). */
  function trackedLoad(
    load: (
      kind: 'get' | 'hgetall',
      key: string,
      db: number | undefined,
    ) => Promise<{ value: unknown; pttl: unknown; session: TrackingSession }>,
    kind: 'get' | 'hgetall',
    key: string,
    client: Client,
    ns: string,
    askedAt: number,
  ): Promise<Rec> {
    return load(kind, key, isCluster ? undefined : dbOf(client)).then((read): Rec => {
      const expiresAt = typeof read.pttl === 'number' && read.pttl >= 0 ? askedAt + read.pttl : undefined;
      if (kind === 'get') return record({ ns, kind: 'string', value: read.value, expiresAt, session: read.session });
      return record({
        ns,
        kind: 'hash',
        value: Object.freeze(read.value as Record<string, unknown>),
        expiresAt,
        session: read.session,
      });
    });
  }

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
      if (stream !== undefined || !blocked(command as Cmd)) void down.call(c, command as Cmd, stream, node);
    },
    sharded: (key) => writeHot.owns(key),
    sum: (c, command) => writeHot.route(c, command, 'get'),
  });

  function sendCommand(this: Client, command: Cmd, stream?: unknown, node?: unknown): unknown {
    const send = down;
    if (hook.bypass) {
      // sent by the GET fast path below (which counted it already) or by the adapter's own features
      dispatched.add(command);
      if (stream === undefined && isClosing(this)) {
        // a fold, merged increment or probe of ours behind the user's QUIT would meet a closing socket
        command.reject(new HotKeyError(ErrorCode.Closed, `${command.name}: the Redis client is closing`));
        return command.promise;
      }
      if (stream === undefined && blocked(command)) return command.promise;
      return send.call(this, command, stream, node);
    }
    if (dispatched.has(command)) return send.call(this, command, stream, node);
    let name = command.name;
    // call('SET', …) keeps the caller's case; ioredis's own methods are lower case already
    if (!isRead(name) && !WRITES.has(name) && name !== 'exec') name = name.toLowerCase();
    Ctor ??= command.constructor as CmdCtor;
    // rate limits apply to commands on their own (not inside a pipeline or MULTI, where a command left out would shift the replies)
    if (hk.limiting && stream === undefined && command.inTransaction !== true && !openTransactions.has(this)) {
      const refused = refuse(command, isRead(name));
      if (refused !== undefined) return refused;
    }
    const open = stream === undefined ? openTransactions.get(this) : undefined;
    if (stream === undefined && open === undefined && writeHot.active) {
      if (name === 'quit') void writeHot.flush(); // merged increments go out before QUIT
      // routed commands are not watched by the breaker: the commands they send are
      const routed = writeHot.route(this, command, name);
      if (routed !== undefined) {
        dispatched.add(command);
        return routed;
      }
    }
    // MGET, HMGET, Buffer replies, reads in a pipeline (multi-read.ts); never a MULTI's commands
    const answered = multiRead.dispatch(this, command, name, stream, node, openTransactions.has(this));
    if (answered !== undefined) {
      dispatched.add(command);
      return answered;
    }
    if (stream === undefined && blocked(command, name)) {
      dispatched.add(command);
      return command.promise;
    }
    if (
      stream === undefined &&
      open === undefined &&
      isRead(name) &&
      typeof command.replyEncoding === 'string' &&
      this.status !== 'end' &&
      !inSubscriberMode(this)
    ) {
      dispatched.add(command);
      return read(this, send, command, name);
    }
    const writes = WRITES.has(name) && command.isReadOnly !== true;
    if (writes || KEYSPACE_WRITES.has(name)) {
      dispatched.add(command);
      const keys = writes ? namesOf(command) : new Set<string>();
      for (const key of keys) hk.track(key, 'write'); // write-hot detection (rules with kind 'write' / 'any')
      const flushed = writes ? new Set<string>() : flushedBy(this, name, command.args);
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
        if (stream === undefined) openTransactions.delete(this);
        else transactionKeys.delete(stream as object);
        dispatched.add(command);
        settleAfterInvalidation(command, pending.keys, pending.flushed);
      }
    } else if (stream === undefined && !isCluster && name === 'multi') {
      // multi({ pipeline: false }): MULTI goes out now, the commands after it are QUEUED until EXEC
      openTransactions.set(this, { keys: new Set(), flushed: new Set() });
    } else if (stream === undefined && name === 'discard') {
      openTransactions.delete(this);
    }
    return send.call(this, command, stream, node);
  }

  /** runs ioredis's own method with the hook passing its command straight through */
  function bypassing(client: Client, method: (...a: unknown[]) => unknown, args: unknown[]): unknown {
    return unhooked(() => method.apply(client, args));
  }

  /**
   * GET's fast path for hot keys: a hit resolves without building an ioredis Command (~10× cheaper).
   * Everything else — a cold key, a callback, a Buffer key or prefix, a client not ready — is
   * ioredis's own `get`, through the hook. Installed only without `showFriendlyErrorStack`, whose
   * stacks must start at the caller (this frame would come first).
   */
  function get(this: Client, ...args: unknown[]): unknown {
    const baseGet = base.get as (...a: unknown[]) => unknown;
    const arg = args[0];
    const prefix = this.options.keyPrefix;
    if (
      args.length !== 1 ||
      typeof arg !== 'string' ||
      (prefix !== undefined && typeof prefix !== 'string') ||
      this.status !== 'ready' ||
      inSubscriberMode(this) ||
      openTransactions.has(this) ||
      hk.limiting // limits are checked on the command path
    ) {
      return baseGet.apply(this, args);
    }
    const key = prefix ? prefix + arg : arg;
    if (key.length > MAX_KEY_LENGTH) return baseGet.apply(this, args);
    // one lookup: 0 not hot; more than 1 copy with replicas on: replica-served, by read()
    const copies = hk.replicasOf(key);
    if (copies === 0 || (copies > 1 && replicas !== undefined)) return baseGet.apply(this, args);
    if (writeHot.owns(key)) return baseGet.apply(this, args); // a sharded counter: GET sums its shards
    const ns = namespaceOf(this);
    let returned: unknown;
    let sent = false;
    const loaded = hk.get(key, (): Promise<Rec> => {
      const refused = loadBlocked(key);
      if (refused !== undefined) return Promise.reject(refused);
      const askedAt = performance.now();
      const node = tracking?.nodeFor(key);
      if (mayWaitForTracking(node)) return getAfterTracking(node!, key, this, args, ns);
      if (node?.session.live) return trackedLoad(node.load.bind(node), 'get', key, this, ns, askedAt);
      const session = tracking === undefined ? undefined : UNTRACKED;
      sent = true;
      returned = bypassing(this, baseGet, args);
      const ttl = bypassing(this, base.pttl as (...a: unknown[]) => unknown, args); // same round trip
      return withTtl(
        (returned as Promise<unknown>).then(
          (value): Rec => ({ ns, kind: 'string', value, expiresAt: undefined, session }),
        ),
        ttl,
        askedAt,
      );
    });
    if (sent) return returned;
    return loaded.then(
      (rec) => {
        if (rec.ns === ns && rec.kind === 'string' && fresh(rec) && vouched(rec)) return rec.value;
        if (!vouched(rec)) hk.dropLocal(key);
        return bypassing(this, baseGet, args);
      },
      () => bypassing(this, baseGet, args),
    );
  }

  function duplicate(this: Client, ...args: unknown[]): Client {
    const copy = (base.duplicate as (...a: unknown[]) => Client).apply(this, args);
    const override = args[0] as { monitor?: boolean } | undefined;
    // a MONITOR connection (redis.monitor()) carries no reads or writes of its own
    if (!isCluster && override?.monitor === true) return copy;
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
  Object.setPrototypeOf(client, hooked);
  if (Object.getPrototypeOf(client) !== hooked || Object.hasOwn(client, 'sendCommand'))
    throw new TypeError('withHotKeys: the client refused the hook (a Proxy or an exotic object?)');
  return client;
}

/**
 * A connection of our own to a node, for tracking (unwrapped, with the client's options: auth,
 * TLS, sentinels): RESP2, no key prefix, no offline queue (a load on a connection that is down
 * fails at once and the read goes to the user's client), reconnecting with a capped backoff.
 */
function connectionTo(
  client: Client,
  base: Record<string | symbol, unknown>,
  nodeKey: string,
  role: 'reader' | 'sub',
): Redis | undefined {
  const overrides = {
    protocol: 2,
    keyPrefix: undefined,
    lazyConnect: false,
    enableOfflineQueue: false,
    enableAutoPipelining: false,
    autoResubscribe: false,
    autoResendUnfulfilledCommands: false,
    readOnly: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (times: number) => Math.min(50 * times, 1000),
    connectionName: role === 'reader' ? 'hotkey-tracking' : 'hotkey-invalidations',
  };
  if ((client as Partial<Cluster>).isCluster !== true) {
    return (base.duplicate as (o: object) => Redis).call(client, { ...overrides, monitor: false });
  }
  const node = (client as Cluster).nodes('master').find((n) => `${n.options.host}:${n.options.port}` === nodeKey);
  return node?.duplicate(overrides as never);
}

/** A RESP2 subscriber connection rejects reads: let ioredis say so. */
function inSubscriberMode(client: Client): boolean {
  return Boolean((client as { condition?: { subscriber?: unknown } | null }).condition?.subscriber);
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
