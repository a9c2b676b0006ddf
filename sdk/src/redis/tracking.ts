/**
 * Writes from anywhere: Redis server-assisted client-side caching (CLIENT TRACKING), for hot keys
 * only, so that a value written by a client without the SDK (redis-cli, another service, a Lua
 * script) leaves every instance's cache within milliseconds, not at `cacheTtlMs`.
 *
 * Design, per Redis node a hot key lives on (one for a standalone server, one per master a hot
 * key was read from for a Cluster), two connections of our own, made with the wrapped client's
 * options (auth, TLS, sentinels) and `protocol: 2`:
 * - `sub` asks its `CLIENT ID`, then SUBSCRIBEs to `__redis__:invalidate`. RESP2 on purpose:
 *   a RESP3 redirect target gets `invalidate` push frames, which ioredis 6 drops.
 * - `reader` runs `CLIENT TRACKING on REDIRECT <sub id> OPTIN`: Redis remembers only the keys it
 *   reads right after `CLIENT CACHING yes`. A hot load is one transaction on it —
 *   `MULTI, [SELECT db,] CLIENT CACHING yes, GET|HGETALL key, PTTL key, EXEC` — which reads the
 *   value, opts that key (and no other) into tracking and reads its TTL in one round trip. Every
 *   reply is checked: a load whose opt-in failed is not a tracked load.
 * So Redis-side tracking state is the hot keys this instance loaded (OPTIN; a key leaves Redis's
 * table when it is written), cold reads never touch these connections (they stay on the user's
 * client), and the user's connection never enters tracking mode or a MULTI of ours.
 *
 * When the connections open: at the wrapped client's first read (a GET, HGET, HGETALL, MGET or
 * HMGET of any key, cold or hot), once it is ready — every master of a Cluster — so that a key
 * that turns hot later, from this instance's reads or a promotion, is loaded tracked and cached
 * from its first load, and reads are local from the read after it. Not at wrapping: a client
 * that never reads (a subscriber, a writer, a blocking-pop worker, the `duplicate()` made for
 * pub/sub, which is wrapped too) makes no connection of ours, so a server counting its clients
 * sees what a plain client makes. A hot load whose node's connections are still being made (the
 * first reads after they were opened, a few ms) waits for them, until at most `TRACKING_WAIT_MS`
 * after they were opened (concurrent reads share that one load); not up by then, it is read
 * through the user's client and not cached.
 *
 * Each node's live state is a `TrackingSession`; a value loaded under a session is served from
 * the local cache only while that session lives (the wrapper checks it on every cached read). A
 * session ends — and the values loaded under it are dropped at once (`hk.dropLocal`) — when
 * either connection closes, when they stop answering the 1 s heartbeat PING for `deadMs`, and on
 * a flush (an invalidation with a null key list: FLUSHDB/FLUSHALL on that node). Until a new
 * session is up (both connections ready, subscribed, tracking redirected to the new sub id),
 * hot loads go through the user's client and are NOT cached: every read goes to Redis. An
 * invalidation for a key drops that key's value and voids a load of it in flight (its result is
 * not cached: the Lettuce #3481 race, an invalidation overtaking the reply on the other socket).
 *
 * Not seen through tracking (Redis 7.0 sends nothing): SWAPDB by an outside client. Tracking is by
 * key name across databases, so a write to `k` in db 1 drops a cached `k` of db 0: too much,
 * never too little.
 */
import type { HotKeyClient } from '../client/client.ts';
import { keyName } from './identity.ts';
import { keySlot } from './slots.ts';

const CHANNEL = '__redis__:invalidate';

/**
 * ms after a node's connections were opened during which a hot load waits for its first session
 * (a tracked load is cached, an untracked one is not); readers of the key share that one load
 * meanwhile. A bound in total, not per load: connections not up by then (an unreachable node, a
 * refused CLIENT TRACKING) cost later loads no wait. Each untracked load is a GET per read of a hot
 * key, so the wait covers a busy process: 20 instances in 4 processes opening theirs at one
 * surge's first read took 240 to 630 ms (test/bench/node-redis.bench.ts, part fleet, a loaded
 * 2-core machine), and with a 250 ms bound most of that surge's reads went to Redis.
 */
export const TRACKING_WAIT_MS = 1000;

/** A node's tracking state: values loaded under it are served while `live`. */
export interface TrackingSession {
  live: boolean;
}
/** The session of a value read without tracking: served to its own load's caller, never from the cache. */
export const UNTRACKED: TrackingSession = Object.freeze({ live: false }) as TrackingSession;

export interface TrackedRead {
  value: unknown;
  pttl: unknown;
  session: TrackingSession;
}

export interface TrackingOptions {
  /** heartbeat PING period on both connections of a node @default 1000 */
  pingMs?: number;
  /** a node whose connections answered no PING for this long loses its session @default 3000 */
  deadMs?: number;
  /** hears connection faults (they never reach the caller) @default ignore */
  onError?: (error: Error) => void;
}

/**
 * The wrapped client as tracking sees it: its readiness, its end, and a Cluster's slot map and
 * masters. An ioredis `Redis` or `Cluster` is one as it is; another adapter hands a view of its
 * client with these names.
 */
export interface TrackedClient {
  readonly status: string;
  readonly isCluster?: boolean;
  on(event: 'ready' | 'end', listener: () => void): unknown;
  once(event: 'end', listener: () => void): unknown;
  /** a Cluster's slot owners: `slots[slot][0]` is the master's `host:port` */
  readonly slots?: ReadonlyArray<readonly string[] | undefined>;
  /** a Cluster's masters */
  nodes?(role: 'master'): ReadonlyArray<{ options: { host?: string; port?: number } }>;
}

/**
 * A connection of our own to one node (RESP2, no key prefix, no offline queue), as tracking
 * drives it. An ioredis `Redis` is one as it is; another adapter hands one over its client's
 * connections. Events: 'ready', 'close', 'error', and 'messageBuffer' (channel and payload of a
 * message on a subscribed channel; the payload is the array of keys, or null for a flush).
 */
export interface TrackingConnection {
  readonly status: string;
  on(event: 'ready' | 'close', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'messageBuffer', listener: (channel: Buffer, payload: unknown) => void): unknown;
  /** `CLIENT ID` (a number) or `CLIENT TRACKING …` */
  client(...args: string[]): Promise<unknown>;
  subscribe(channel: string): Promise<unknown>;
  /** MULTI … EXEC of `commands`: each reply as `[error, value]`, null when the transaction was discarded */
  multi(commands: string[][]): { exec(): Promise<Array<[Error | null, unknown]> | null> };
  ping(): Promise<unknown>;
  /** closes it; `reconnect`: drops the socket and connects again */
  disconnect(reconnect?: boolean): void;
}

type Client = TrackedClient;
type Role = 'reader' | 'sub';

/** The tracking connections of one wrapped client, one NodeTracker per Redis node, made on first use. */
export class Tracking {
  readonly #client: Client;
  readonly #hk: HotKeyClient;
  readonly #isCluster: boolean;
  readonly #options: Required<TrackingOptions>;
  readonly #nodes = new Map<string, NodeTracker>();
  /** makes a connection of ours to a node with the client's options (unwrapped) */
  readonly #connect: (nodeKey: string, role: Role) => TrackingConnection | undefined;
  readonly #onKey: (key: string) => void;
  readonly #onEnd: (session: TrackingSession) => void;
  #listening = false;
  /** the client sent a read since it was wrapped or last ended: its connections are wanted */
  #reading = false;
  /** the HotKeyClient closed: nothing is cached any more, so no connection is made again */
  #hkClosed = false;

  /**
   * @param onKey hears every key an invalidation named (after its cached value was dropped): replica keys and pushed records follow
   * @param onEnd hears every session that ended (after its values were dropped here): pushed records follow
   */
  constructor(
    client: Client,
    hk: HotKeyClient,
    connect: (nodeKey: string, role: Role) => TrackingConnection | undefined,
    options: TrackingOptions = {},
    onKey: (key: string) => void = () => {},
    onEnd: (session: TrackingSession) => void = () => {},
  ) {
    this.#client = client;
    this.#onKey = onKey;
    this.#onEnd = onEnd;
    this.#hk = hk;
    this.#isCluster = client.isCluster === true;
    this.#connect = connect;
    this.#options = {
      pingMs: options.pingMs ?? 1000,
      deadMs: options.deadMs ?? 3000,
      onError: options.onError ?? (() => {}),
    };
    // a client that read before it was ready (its reads queued) or that connects again after 'end'
    client.on('ready', () => {
      if (this.#reading) this.#openAll();
    });
  }

  /**
   * The HotKeyClient closed (heard as a member of the wrap, wrap-events.ts): the services'
   * shutdown may close it and leave the Redis client to the end (or never quit it), so our
   * connections must not keep the process alive.
   */
  hkClosed(): void {
    this.#hkClosed = true;
    this.close();
  }

  /**
   * The client sends a read: the first one makes the connections of every node (at once when the
   * client is ready, else at its 'ready'). One boolean check for every later read.
   */
  reading(): void {
    if (this.#reading) return;
    this.#reading = true;
    if (this.#client.status === 'ready') this.#openAll();
  }

  /** Every node a key may live on gets its connections now: the server, or every master of a Cluster. */
  #openAll(): void {
    if (this.#hkClosed) return;
    if (!this.#isCluster) {
      this.nodeFor('');
      return;
    }
    for (const node of this.#client.nodes?.('master') ?? []) this.#nodeAt(`${node.options.host}:${node.options.port}`);
  }

  /** The tracker of the node holding `key` (made, and connecting, if it was not yet); undefined while the node is unknown. */
  nodeFor(key: string): NodeTracker | undefined {
    const nodeKey = this.#isCluster ? this.#client.slots?.[slotOf(key)]?.[0] : 'standalone';
    return nodeKey === undefined ? undefined : this.#nodeAt(nodeKey);
  }

  #nodeAt(nodeKey: string): NodeTracker | undefined {
    if (this.#hkClosed) return undefined;
    let node = this.#nodes.get(nodeKey);
    if (node === undefined) {
      const reader = this.#connect(nodeKey, 'reader');
      const sub = reader && this.#connect(nodeKey, 'sub');
      if (reader === undefined || sub === undefined) {
        reader?.disconnect();
        return undefined;
      }
      if (!this.#listening) {
        // the client ended (quit, disconnect, retries given up): so do our connections; a later
        // connect() of the client makes new ones once it is ready
        this.#listening = true;
        this.#client.once('end', () => {
          this.#listening = false;
          this.#reading = false;
          this.close();
        });
      }
      node = new NodeTracker(nodeKey, reader, sub, this.#hk, this.#options, this.#onKey, this.#onEnd);
      this.#nodes.set(nodeKey, node);
    }
    return node;
  }

  /** Node keys with a live session (for tests and stats). */
  liveNodes(): string[] {
    return [...this.#nodes.values()].filter((n) => n.session.live).map((n) => n.nodeKey);
  }

  close(): void {
    for (const node of this.#nodes.values()) node.close();
    this.#nodes.clear();
  }
}

export class NodeTracker {
  readonly nodeKey: string;
  /** the current session; a dead one until both connections are up and tracking is redirected */
  session: TrackingSession = { live: false };
  /** invalidation messages heard (keys and flushes), for tests and stats */
  invalidations = 0;
  readonly #reader: TrackingConnection;
  readonly #sub: TrackingConnection;
  readonly #hk: HotKeyClient;
  readonly #options: Required<TrackingOptions>;
  readonly #onKey: (key: string) => void;
  readonly #onEnd: (session: TrackingSession) => void;
  /** the sub connection's CLIENT ID once it is subscribed, per connection incarnation */
  #subscribed: Promise<number> | undefined;
  /** bumped by every loss and every (re)establishment: a stale establishment never goes live */
  #attempt = 0;
  #answeredAt = performance.now();
  readonly #timer: NodeJS.Timeout;
  #closed = false;
  /** a session went live once: the connections made on first use are up */
  #everLive = false;
  readonly #openedAt = performance.now();
  #wentLive!: () => void;
  readonly #firstLive = new Promise<void>((resolve) => (this.#wentLive = resolve));

  constructor(
    nodeKey: string,
    reader: TrackingConnection,
    sub: TrackingConnection,
    hk: HotKeyClient,
    options: Required<TrackingOptions>,
    onKey: (key: string) => void = () => {},
    onEnd: (session: TrackingSession) => void = () => {},
  ) {
    this.nodeKey = nodeKey;
    this.#onKey = onKey;
    this.#onEnd = onEnd;
    this.#reader = reader;
    this.#sub = sub;
    this.#hk = hk;
    this.#options = options;
    const fault = (err: Error) => options.onError(err);
    reader.on('error', fault);
    sub.on('error', fault);
    reader.on('close', () => this.#lose());
    sub.on('close', () => {
      this.#subscribed = undefined;
      this.#lose();
    });
    reader.on('ready', () => this.#establish());
    sub.on('ready', () => {
      // a fresh connection is not in subscriber mode (autoResubscribe is off): ask its id first
      const subscribed = sub.client('ID').then(async (id) => {
        await sub.subscribe(CHANNEL);
        return Number(id);
      });
      subscribed.catch(fault);
      this.#subscribed = subscribed;
      this.#establish();
    });
    sub.on('messageBuffer', (channel: Buffer, payload: unknown) => this.#onInvalidation(channel, payload));
    this.#timer = setInterval(() => this.#beat(), options.pingMs);
    this.#timer?.unref?.(); // a stubbed or fake clock may hand back no Timeout object
  }

  /**
   * A tracked load: value, PTTL and the session it was opted in under, in one transaction on the
   * reader. Rejects when the session is down or any reply is an error (then it is no tracked read).
   */
  async load(kind: 'get' | 'hgetall', key: string, db: number | undefined): Promise<TrackedRead> {
    const session = this.session;
    if (!session.live) throw new Error(`tracking of ${this.nodeKey} is down`);
    const commands: string[][] = db === undefined ? [] : [['select', String(db)]];
    commands.push(['client', 'caching', 'yes'], [kind, key], ['pttl', key]);
    const replies = (await this.#reader.multi(commands).exec()) ?? [];
    if (replies.length !== commands.length) throw new Error('tracked load: transaction discarded');
    for (const [err] of replies) if (err) throw err;
    return { value: replies[replies.length - 2]![1], pttl: replies[replies.length - 1]![1], session };
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#lose();
    this.#reader.disconnect();
    this.#sub.disconnect();
  }

  async #establish(): Promise<void> {
    const attempt = ++this.#attempt;
    const subscribed = this.#subscribed;
    if (this.#closed || subscribed === undefined || this.#reader.status !== 'ready') return;
    try {
      const subId = await subscribed;
      await this.#reader.client('TRACKING', 'ON', 'REDIRECT', String(subId), 'OPTIN');
    } catch (err) {
      this.#options.onError(err as Error);
      return;
    }
    if (attempt !== this.#attempt || this.#closed || this.#reader.status !== 'ready' || this.#sub.status !== 'ready')
      return;
    this.#answeredAt = performance.now();
    this.session = { live: true };
    this.#everLive = true;
    this.#wentLive();
  }

  /** Its connections have not had a live session yet, and were opened less than TRACKING_WAIT_MS ago. */
  get starting(): boolean {
    return !this.#everLive && !this.#closed && performance.now() - this.#openedAt < TRACKING_WAIT_MS;
  }

  /** Resolves when the first session goes live, or at the end of the start-up wait (then check `session.live`). */
  firstLive(): Promise<void> {
    if (this.#everLive) return Promise.resolve();
    const ms = Math.max(0, this.#openedAt + TRACKING_WAIT_MS - performance.now());
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer?.unref?.();
      void this.#firstLive.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Invalidations Redis could not deliver to us from now on: what we hold from this node goes. */
  #lose(): void {
    this.#attempt++;
    this.#end();
  }

  /** Ends the current session and drops every value loaded under it (here only). */
  #end(): void {
    const old = this.session;
    if (!old.live) return;
    old.live = false;
    this.session = { live: false };
    this.#hk.dropLocal((_key, value) => (value as { session?: unknown } | null)?.session === old);
    this.#onEnd(old);
  }

  #onInvalidation(channel: Buffer, payload: unknown): void {
    if (channel.toString() !== CHANNEL) return;
    this.invalidations++;
    if (payload === null) {
      // FLUSHDB / FLUSHALL on this node (any database): every value of this node goes, and a load
      // in flight too (its session ends); tracking itself stays on, so a new session starts now
      const wasLive = this.session.live;
      this.#end();
      if (wasLive) this.session = { live: true };
      return;
    }
    if (!Array.isArray(payload)) return;
    for (const raw of payload) {
      const key = keyName(raw);
      if (key === undefined) continue;
      this.#hk.dropLocal(key);
      this.#onKey(key);
    }
  }

  /** Both connections must keep answering: a silent one (a frozen link) ends the session. */
  #beat(): void {
    if (!this.session.live) {
      // an establishment that failed (a refused CLIENT TRACKING) is retried here
      if (!this.#closed && this.#reader.status === 'ready' && this.#sub.status === 'ready') void this.#establish();
      return;
    }
    if (performance.now() - this.#answeredAt > this.#options.deadMs) {
      this.#options.onError(
        new Error(`tracking connections of ${this.nodeKey} silent for ${this.#options.deadMs} ms: reconnecting`),
      );
      this.#lose();
      this.#reader.disconnect(true);
      this.#sub.disconnect(true);
      return;
    }
    Promise.all([this.#reader.ping(), this.#sub.ping()]).then(
      () => {
        this.#answeredAt = performance.now();
      },
      () => {},
    );
  }
}

/** Redis Cluster hash slot of a key (slots.ts). */
export const slotOf = keySlot;
