/**
 * The hot read path of the ioredis adapter: a read of one hot key (GET, HGET, HGETALL with a
 * string reply encoding) answered from hk's local cache, and GET's fast path, which answers a hot
 * hit without building an ioredis Command. Multi-key reads, Buffer replies and reads in a pipeline
 * reach `read` through multi-read.ts.
 *
 * - A cached record is served while Redis has not expired it and, with tracking on, while the
 *   session it was read under lives (a write we can no longer hear about may have changed it).
 * - Concurrent reads of a hot key not cached yet are merged into one load (hk's single-flight).
 * - A load goes through the node's tracking connections (value, PTTL, opt-in in one round trip)
 *   once they are up; while they are first connecting it waits for them, bounded by tracking.ts's
 *   TRACKING_WAIT_MS. A client not ready yet never waits: its read is queued as plain ioredis
 *   queues it, in call order.
 * - Anything else (another namespace's record, another shape, an expired one, a failed shared
 *   load) is asked of Redis with the caller's own command.
 */
import type { HotKeyClient } from '../client/client.ts';
import { READS, type ReadName } from './commands.ts';
import { dispatched, inSubscriberMode, type Client, type Cmd, type Send } from './cmd.ts';
import { dbOf, keyName } from './identity.ts';
import type { Replicas } from './replicas.ts';
import { record, type Rec } from './shared-records.ts';
import { UNTRACKED, type NodeTracker, type Tracking, type TrackingSession } from './tracking.ts';
import { unhooked } from './unhooked.ts';
import { MAX_KEY_LENGTH } from '../wire/protocol.ts';

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

/** What the wrapper lends the hot read path. */
export interface HotReadContext {
  hk: HotKeyClient;
  isCluster: boolean;
  /** the client's class prototype: ioredis's own `get` and `pttl` */
  base: Record<string | symbol, unknown>;
  tracking: Tracking | undefined;
  replicas: Replicas | undefined;
  /** `host:port/db` of the client's next command */
  namespaceOf(client: Client): string;
  /** the error a load of `key` fails with at once (its node's breaker is open) */
  loadBlocked(key: string): Error | undefined;
  /** watches a command a load sends itself (the breaker) */
  watchLoad(command: Cmd): void;
  /** whether `key` is a sharded counter here (write-hot.ts): its GET sums the shards */
  sharded(key: string): boolean;
  /** a `multi({ pipeline: false })` is open on the client: nothing is answered locally */
  inTransaction(client: Client): boolean;
  /** no own `sendCommand` the hook has not met is on the client (layers.ts): GET's method may answer without a command */
  hookOnTop(): boolean;
}

export interface HotReads {
  /** a read of one key through the cache when hot (settles `command`), counted once */
  read(client: Client, send: Send, command: Cmd, name: ReadName): unknown;
  /** GET's fast path, installed as the client's `get` method */
  get(this: Client, ...args: unknown[]): unknown;
  /** a tracked load of `key` (value, PTTL, opt-in: one round trip) as a cached record */
  trackedLoad: TrackedLoad;
}

type TrackedLoad = (
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
) => Promise<Rec>;

/** runs ioredis's own method with the hook passing its command straight through */
function bypassing(client: Client, method: (...a: unknown[]) => unknown, args: unknown[]): unknown {
  return unhooked(() => method.apply(client, args));
}

export function hotReads(ctx: HotReadContext): HotReads {
  const { hk, isCluster, base, tracking, replicas, namespaceOf, loadBlocked, watchLoad, sharded, inTransaction } = ctx;
  const hookOnTop = ctx.hookOnTop;

  /** A hot load on a node whose tracking connections are still being made waits for them: only a tracked record is cached (or pushed). */
  function mayWaitForTracking(node: NodeTracker | undefined): boolean {
    return node?.starting === true;
  }

  function read(client: Client, send: Send, command: Cmd, name: ReadName): unknown {
    const key = keyName(command.args[0]);
    const arity = name === 'hget' ? 2 : 1;
    if (key === undefined || command.args.length !== arity) return send.call(client, command);
    tracking?.reading(); // a read of a key: the client's tracking connections are wanted
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
      // a client not ready yet queues the read as plain ioredis does (call order, its errors), and
      // opens no tracking connections for it: they open at its 'ready'
      const node = hashWhole && client.status === 'ready' ? tracking?.nodeFor(key) : undefined;
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
  const trackedLoad: TrackedLoad = (load, kind, key, client, ns, askedAt) => {
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
  };

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

  /**
   * GET's fast path for hot keys: a hit resolves without building an ioredis Command (~10× cheaper).
   * Everything else — a cold key, a callback, a Buffer key or prefix, a client not ready, an own
   * `sendCommand` on the client that the hook has not met (layers.ts) — is
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
      inTransaction(this) ||
      hk.limiting || // limits are checked on the command path
      !hookOnTop() // a stub or patch on the instance the hook has not met: it gets the command
    ) {
      return baseGet.apply(this, args);
    }
    const key = prefix ? prefix + arg : arg;
    if (key.length > MAX_KEY_LENGTH) return baseGet.apply(this, args);
    // one lookup: 0 not hot; more than 1 copy with replicas on: replica-served, by read()
    const copies = hk.replicasOf(key);
    if (copies === 0 || (copies > 1 && replicas !== undefined)) return baseGet.apply(this, args);
    if (sharded(key)) return baseGet.apply(this, args); // a sharded counter: GET sums its shards
    tracking?.reading(); // a client reading only hot keys (pushed values) is a reader too
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

  return { read, get, trackedLoad };
}
