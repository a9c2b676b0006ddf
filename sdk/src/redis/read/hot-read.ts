/**
 * The hot read path, for every adapter: a read of one hot key (GET, HGET, HGETALL with a string
 * reply encoding) answered from hk's local cache (a hash in one form whatever the client:
 * hash-replies.ts). An adapter hands it its client's command as a
 * `RedisCommand` (command.ts) and the function that sends one past its hook; ioredis's GET fast path
 * (ioredis/hot-get.ts) shares `trackedLoad` and the record rules below. Multi-key reads, Buffer
 * replies and reads in a pipeline reach `read` through ioredis/multi-read.ts.
 *
 * - A cached record is served while Redis has not expired it and, with tracking on, while the
 *   session it was read under lives (a write we can no longer hear about may have changed it).
 * - Concurrent reads of a hot key not cached yet are merged into one load (hk's single-flight).
 * - A read hk will not cache (`uncachedLoad` of its adapter view: no current lease of the key's
 *   hub, a rule that does not cache) is the caller's own command, a GET held with the job's others
 *   (held-reads.ts): what a plain client's read costs Redis, not a tracked load per read for a
 *   value nobody keeps.
 * - A load goes through the node's tracking connections (value, PTTL, opt-in in one round trip)
 *   once they are up; while they are first connecting it waits for them, bounded by tracking.ts's
 *   TRACKING_WAIT_MS. A client not ready yet never waits: its read is queued as its plain client
 *   queues it, in call order.
 * - Anything else (another namespace's record, another shape, an expired one, a failed shared
 *   load) is asked of Redis with the caller's own command.
 */
import { adapterView, type AdapterView } from '../../client/adapter-view.ts';
import type { HotKeyClient } from '../../client/client.ts';
import { READS, type ReadName } from '../command-table.ts';
import { dispatched, type RedisCommand, type Send } from '../command.ts';
import { hashOf, type CachedHash } from './hash-replies.ts';
import { HeldReads } from './held-reads.ts';
import { keyName } from '../identity.ts';
import { record, type Rec } from './shared-records.ts';
import { UNTRACKED, type NodeTracker, type Tracking, type TrackingSession } from '../tracking/tracking.ts';

/** keys with a cold read in flight remembered at most per adapter; past it, a read is not judged concurrent */
const MAX_IN_FLIGHT = 4096;
/**
 * Marks a cold read counted in its key's in-flight count until answered. A symbol property, as
 * `dispatched` (command.ts): one map transition shared by every command, cheaper than a set of
 * commands (an identity hash per command).
 */
const IN_FLIGHT: unique symbol = Symbol('hotkey.inFlight');
type Counted = { [IN_FLIGHT]?: boolean };

/** Replica keys (replicas.ts), as the read path uses them: GETs of a hot key spread over its copies. */
export interface ReplicaReads {
  copies(key: string): number;
  /** answers `command` (a GET) from one of the key's copies */
  read(key: string, command: RedisCommand, copies: number): void;
}

/** A hot load on a node whose tracking connections are still being made waits for them: only a tracked record is cached (or pushed). */
function mayWaitForTracking(node: NodeTracker | undefined): boolean {
  return node?.starting === true;
}

/** Whether a cached record may still be served: Redis has not expired the key. */
export function fresh(rec: Rec): boolean {
  return rec.expiresAt === undefined || performance.now() < rec.expiresAt;
}

/**
 * Whether a cached record may be served: fresh, and with tracking on, read under a session that
 * still lives (else a write we can no longer hear about may have changed it: the caller drops it).
 */
export function vouched(rec: Rec): boolean {
  return rec.session === undefined || rec.session.live;
}

/** The record once both replies are in; a failed PTTL only means no TTL cap (the value is good). */
export function withTtl(rec: Promise<Rec>, pttl: unknown, askedAt: number): Promise<Rec> {
  return Promise.all([rec, Promise.resolve(pttl).catch(() => -1)]).then(([r, ms]) => {
    if (typeof ms === 'number' && ms >= 0) r.expiresAt = askedAt + ms;
    return record(r);
  });
}

/** What the adapter lends the hot read path. */
/** `C`: the adapter's client, opaque to the core (its context functions read it). */
export interface HotReadContext<C extends object = object> {
  hk: HotKeyClient;
  isCluster: boolean;
  tracking: Tracking | undefined;
  replicas: ReplicaReads | undefined;
  /** `host:port/db` of the client's next command */
  namespaceOf(client: C): string;
  /** the database of the client's next command (a standalone client) */
  dbOf(client: C): number;
  /** the client is connected and ready (a client not ready yet queues its reads itself) */
  ready(client: C): boolean;
  /** a command of the adapter's own, of the same client as `like` (its PTTL, its HGETALL) */
  command(like: RedisCommand, name: string, args: unknown[]): RedisCommand;
  /** the error a load of `key` fails with at once (its node's breaker is open) */
  loadBlocked(key: string): Error | undefined;
  /** watches a command a load sends itself (the breaker) */
  watchLoad(command: RedisCommand): void;
  /**
   * a cached hash as the reply `command` (an HGETALL) expects; undefined: the cache cannot give
   * that shape exactly and Redis answers. Absent: the cached object itself is the reply.
   */
  hashReply?(command: RedisCommand, hash: CachedHash): unknown;
  /** the object whose commands share one connection order (a client under its proxies) @default the client */
  connection?(client: C): object;
  /** whether two held GETs of one key may share one reply (same command options) @default always */
  sameRead?(a: RedisCommand, b: RedisCommand): boolean;
  /**
   * The adapter's circuit breaker, for the cold reads `read` is given a node for: told when one
   * goes out and when it is answered, by the one pair of settling functions the read path puts on
   * the command for its in-flight count (a second pair per cold read would be a second price)
   */
  guard?: ReadGuard;
  /** sends `run`'s commands on `client`'s connection as one write (held GETs flushed together) @default as they come */
  batch?(client: C, run: () => void): void;
}

/** A circuit breaker as the read path tells it of cold reads (an adapter's; `node` is its own). */
export interface ReadGuard {
  /** `command` goes out to `node` now: it is timed from here */
  sent(node: object, command: RedisCommand): void;
  /** `command` was answered: its reply (`failed` false), or `error` */
  answered(node: object, command: RedisCommand, failed: boolean, error: unknown): void;
}

/** what a loader hk does not cache returns: the caller sends its own command instead (its reply is not a record) */
export const PASSED: Promise<Rec> = Promise.resolve<Rec>({
  ns: '',
  kind: 'string',
  value: null,
  expiresAt: 0, // never fresh: were it ever cached, readers would ask Redis
  session: undefined,
});

/** A hash reply as the cache's form; a reply that is no hash fails the load (readers then ask Redis). */
function cachedHash(reply: unknown): CachedHash {
  const hash = hashOf(reply);
  if (hash === undefined) throw new TypeError('hot read: an HGETALL reply that is not a hash of strings');
  return hash;
}

export interface HotReads<C extends object = object> {
  /**
   * a read of one key through the cache when hot (settles `command`), counted once; `node`: the
   * breaker's node of a read it has let through (`guard` times it if it goes to Redis cold)
   */
  read(client: C, send: Send<C>, command: RedisCommand, name: ReadName, node?: object): unknown;
  /**
   * a GET of a hot key, counted already, whose value hk does not cache (the view's `uncachedLoad`
   * in its loader): sent as a plain client sends it, held with the job's other GETs (held-reads.ts)
   */
  plain(client: C, send: Send<C>, command: RedisCommand): unknown;
  /** a tracked load of `key` (value, PTTL, opt-in: one round trip) as a cached record */
  trackedLoad: TrackedLoad<C>;
  /** sends the cold GETs held for `client`'s connection: the adapter calls it before any other command of it */
  flush(client: C): void;
}

export type TrackedLoad<C extends object = object> = (
  load: (
    kind: 'get' | 'hgetall',
    key: string,
    db: number | undefined,
  ) => Promise<{ value: unknown; pttl: unknown; session: TrackingSession }>,
  kind: 'get' | 'hgetall',
  key: string,
  client: C,
  ns: string,
  askedAt: number,
) => Promise<Rec>;

/** The hot read path over an adapter's context (see the module comment); `hotReads` makes one. */
export function hotReads<C extends object>(ctx: HotReadContext<C>): HotReads<C> {
  return new HotReadPath(ctx);
}

/** What the read path reads of its context, with what it derives once. */
interface Parts<C extends object> {
  readonly ctx: HotReadContext<C>;
  readonly hk: HotKeyClient;
  /** what the read path asks of hk beyond its public API */
  readonly view: AdapterView;
  readonly isCluster: boolean;
  readonly tracking: Tracking | undefined;
  readonly replicas: ReplicaReads | undefined;
  readonly namespaceOf: (client: C) => string;
  readonly loadBlocked: (key: string) => Error | undefined;
  readonly watchLoad: (command: RedisCommand) => void;
  readonly hashReply: HotReadContext<C>['hashReply'];
  readonly guard: ReadGuard | undefined;
  /** Redis tracks some keys by broadcast for this client: their cold GETs are noted */
  readonly watches: boolean;
}

class HotReadPath<C extends object> implements HotReads<C> {
  readonly #p: Parts<C>;
  /** cold GETs of one job, counted before any is sent, and GETs hk does not cache (held-reads.ts) */
  readonly #held: HeldReads<C>;

  constructor(ctx: HotReadContext<C>) {
    const { hk, isCluster, tracking, replicas, namespaceOf, loadBlocked, watchLoad, hashReply, guard } = ctx;
    const watches = tracking?.watches === true;
    this.#p = {
      ctx,
      hk,
      view: adapterView(hk),
      isCluster,
      tracking,
      replicas,
      namespaceOf,
      loadBlocked,
      watchLoad,
      hashReply,
      guard,
      watches,
    };
    this.#held = new HeldReads<C>(
      ctx.connection ?? ((c) => c),
      (client, send, command, key, plain, node) =>
        plain
          ? send.call(client, command)
          : hk.isHot(key)
            ? this.#hot(client, send, command, 'get', key, false)
            : this.#sendCold(client, send, command, key, true, node),
      ctx.sameRead ?? (() => true),
      // a held GET answered by another's reply goes out with it now: the breaker times it from here
      guard === undefined ? undefined : (_client, command, node) => node !== undefined && guard.sent(node, command),
      ctx.batch,
    );
  }

  /** sends the cold GETs held for `client`'s connection: the adapter calls it before any other command of it */
  flush(client: C): void {
    this.#held.flush(client);
  }

  /**
   * cold reads sent and not answered yet, per key: a read of a key in it is concurrent with one
   * (client/read/surge-local.ts judges the key surging); each of those reads carries IN_FLIGHT
   */
  readonly #inFlight = new Map<string, number>();
  /**
   * A cold read of `key` leaves the in-flight count once answered: its settling functions are
   * wrapped (whoever answers it calls them: the adapter's send, a held read's shared reply), so
   * the count drops as the reply is handed over, before anything awaiting it resumes — the
   * caller's next read, on the reply, must not count it as unanswered — at the price of two
   * closures, no promise of ours. The breaker's `node` hears the answer from the same pair.
   */
  #watchCold(command: RedisCommand, key: string, node: object | undefined): void {
    const { resolve, reject } = command;
    command.resolve = (value) => {
      this.#coldAnswered(command, key, node, false, undefined);
      return resolve(value);
    };
    command.reject = (error) => {
      this.#coldAnswered(command, key, node, true, error);
      reject(error);
    };
  }
  #coldAnswered(command: RedisCommand, key: string, node: object | undefined, failed: boolean, error: unknown): void {
    const { view, guard, watches } = this.#p;
    if (node !== undefined) guard!.answered(node, command, failed, error);
    if (watches) view.readAnswered(key, command.promise);
    if ((command as Counted)[IN_FLIGHT] !== true) return;
    (command as Counted)[IN_FLIGHT] = false;
    const left = this.#inFlight.get(key)! - 1;
    if (left === 0) this.#inFlight.delete(key);
    else this.#inFlight.set(key, left);
  }
  /**
   * Sends a cold read of `key` (watched by watchCold), counted in flight until it is answered. A
   * GET of a key Redis tracks by broadcast for us is noted: should the key surge, its load may
   * take this reply (tracking.ts `prefixes`, client/read/recent-reads.ts).
   */
  #sendCold(
    client: C,
    send: Send<C>,
    command: RedisCommand,
    key: string,
    get: boolean,
    node: object | undefined,
  ): unknown {
    const { ctx, view, isCluster, tracking, guard, watches } = this.#p;
    const n = this.#inFlight.get(key);
    if (n !== undefined || this.#inFlight.size < MAX_IN_FLIGHT) {
      this.#inFlight.set(key, (n ?? 0) + 1);
      (command as Counted)[IN_FLIGHT] = true;
    }
    if (get && watches) {
      const vouch = tracking!.watching(key);
      if (vouch !== undefined) view.noteRead(key, vouch, isCluster ? undefined : ctx.dbOf(client), command.promise);
    }
    if (node !== undefined) guard!.sent(node, command);
    return send.call(client, command);
  }

  /** `send`, and the breaker watches `command` from when it goes out (a held read waits for the end of the job first) */
  #watching(send: Send<C>, command: RedisCommand): Send<C> {
    const { watchLoad } = this.#p;
    return function (this: C, sent: RedisCommand, stream?: unknown, node?: unknown) {
      if (sent === command) watchLoad(sent);
      return send.call(this, sent, stream, node);
    };
  }

  /**
   * The caller's own read of hot `key` whose value hk does not cache: a GET held with the job's
   * others when it may be (`mayHold`: not sent from a flush), anything else sent now.
   */
  #plainRead(client: C, send: Send<C>, command: RedisCommand, name: ReadName, key: string, mayHold: boolean): unknown {
    const { ctx, watchLoad } = this.#p;
    if (name === 'get' && mayHold && ctx.ready(client))
      return this.#held.hold(client, this.#watching(send, command), command, key, true);
    this.#held.flush(client);
    watchLoad(command);
    return send.call(client, command);
  }

  plain(client: C, send: Send<C>, command: RedisCommand): unknown {
    const key = keyName(command.args[0]);
    if (key === undefined) {
      this.#held.flush(client);
      return send.call(client, command);
    }
    return this.#plainRead(client, send, command, 'get', key, true);
  }

  read(client: C, send: Send<C>, command: RedisCommand, name: ReadName, node?: object): unknown {
    const { ctx, hk, view, tracking, guard, watches } = this.#p;
    const key = keyName(command.args[0]);
    const arity = name === 'hget' ? 2 : 1;
    if (key === undefined || command.args.length !== arity) {
      this.#held.flush(client);
      return send.call(client, command);
    }
    tracking?.reading(); // a read of a key: the client's tracking connections are wanted
    if (!hk.isHot(key)) {
      // cold, the common case: counted before it is sent. A GET waits for the end of the job
      // (held-reads.ts), so that the job's other reads of the key are counted too; anything
      // else is sent as is (no promise of ours in between) — unless this very count made the key
      // surge here (client/read/surge-local.ts): then it is the key's hot load. A read while another
      // of the key is unanswered surges it at once: the key comes faster than a round trip; so
      // does one right after a kept reply of it landed (tracked prefixes, recent-reads.ts)
      const unanswered = this.#inFlight.get(key) ?? (watches && view.readJustAnswered(key) ? 1 : undefined);
      if (unanswered === undefined) hk.track(key);
      else view.trackConcurrent(key, unanswered);
      if (!hk.isHot(key)) {
        const guarded = guard === undefined ? undefined : node;
        this.#watchCold(command, key, guarded);
        if (name === 'get' && ctx.ready(client)) return this.#held.hold(client, send, command, key, false, guarded);
        this.#held.flush(client);
        return this.#sendCold(client, send, command, key, name === 'get', guarded);
      }
    }
    return this.#hot(client, send, command, name, key, true);
  }

  /**
   * A read of hot `key` through the cache (settles `command`); sent past the cache when it cannot
   * serve it. `mayHold`: a GET hk does not cache may be held (not when sent from a flush).
   */
  #hot(client: C, send: Send<C>, command: RedisCommand, name: ReadName, key: string, mayHold: boolean): unknown {
    const { ctx, hk, view, tracking, replicas, namespaceOf, loadBlocked, watchLoad, hashReply } = this.#p;
    if (replicas !== undefined && name === 'get' && command.replyEncoding === 'utf8') {
      const copies = replicas.copies(key);
      if (copies > 1) {
        this.#held.flush(client);
        hk.track(key);
        replicas.read(key, command, copies);
        return command.promise;
      }
    }
    // what the job holds goes first — unless this GET may join it: a hot key no lease vouches for
    // is read plain (below), and its reads in the job share one GET
    if (this.#held.holding(client) && (name !== 'get' || !mayHold || view.vouches(key))) this.#held.flush(client);
    const ns = namespaceOf(client);
    const field = name === 'hget' ? String(command.args[1]) : undefined;
    let sent = false;
    let returned: unknown;
    /** PTTL of the key, sent right behind the read: same connection, same round trip */
    const pttl = (): Promise<unknown> => {
      const ttl = ctx.command(command, 'pttl', [command.args[0]]);
      dispatched.add(ttl);
      void send.call(client, ttl);
      return ttl.promise;
    };
    let waited = false;
    let passed = false;
    const loader = (): Promise<Rec> => {
      const refused = loadBlocked(key);
      if (refused !== undefined) return Promise.reject(refused);
      if (view.uncachedLoad) {
        passed = true; // the caller's own command goes, below
        return PASSED;
      }
      const askedAt = performance.now();
      const hashWhole = name !== 'hget' || hk.isHot(key);
      // a client not ready yet queues the read as plain ioredis does (call order, its errors), and
      // opens no tracking connections for it: they open at its 'ready'
      const node = hashWhole && ctx.ready(client) ? tracking?.nodeFor(key) : undefined;
      if (!waited && mayWaitForTracking(node)) {
        waited = true;
        return node!.firstLive().then(loader);
      }
      if (node?.session.live)
        return this.trackedLoad(node.load.bind(node), name === 'get' ? 'get' : 'hgetall', key, client, ns, askedAt);
      const session = tracking === undefined ? undefined : UNTRACKED;
      if (name === 'hget' && hashWhole) {
        // a hot hash is loaded once, whole, for every field
        const all = ctx.command(command, 'hgetall', [command.args[0]]);
        dispatched.add(all);
        watchLoad(all);
        void send.call(client, all);
        const rec = all.promise.then(
          (value): Rec => ({
            ns,
            kind: 'hash',
            value: cachedHash(value),
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
      const rec = command.promise.then(
        (value) =>
          ({ ns, kind, value: kind === 'hash' ? cachedHash(value) : value, expiresAt: undefined, session }) as Rec,
      );
      return withTtl(rec, pttl(), askedAt);
    };
    const loaded = hk.get(key, loader);
    if (passed) return this.#plainRead(client, send, command, name, key, mayHold);
    loaded.then(
      (rec) => {
        if (sent) return; // this very command went to Redis and settles itself
        if (!vouched(rec))
          hk.dropLocal(key); // the next read loads it again (tracked, once tracking is back)
        else if (rec.ns === ns && fresh(rec)) {
          if (name === 'get' && rec.kind === 'string') return void command.resolve(rec.value);
          if (name === 'hgetall' && rec.kind === 'hash') {
            const reply = hashReply === undefined ? rec.value : hashReply(command, rec.value);
            if (reply !== undefined) return void command.resolve(reply);
          }
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
  readonly trackedLoad: TrackedLoad<C> = (load, kind, key, client, ns, askedAt) => {
    const { isCluster, ctx } = this.#p;
    return load(kind, key, isCluster ? undefined : ctx.dbOf(client)).then((read): Rec => {
      const expiresAt = typeof read.pttl === 'number' && read.pttl >= 0 ? askedAt + read.pttl : undefined;
      if (kind === 'get') return record({ ns, kind: 'string', value: read.value, expiresAt, session: read.session });
      return record({
        ns,
        kind: 'hash',
        value: cachedHash(read.value),
        expiresAt,
        session: read.session,
      });
    });
  };
}
