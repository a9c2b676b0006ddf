/**
 * Writes from anywhere: Redis server-assisted client-side caching (CLIENT TRACKING), for hot keys
 * only, so that a value written by a client without the SDK (redis-cli, another service, a Lua
 * script) leaves every instance's cache within milliseconds, not at `cacheTtlMs`.
 *
 * Design, per Redis node a hot key lives on (one for a standalone server, one per master a hot
 * key was read from for a Cluster), two connections of our own (node-tracker.ts), made with the
 * wrapped client's options (auth, TLS, sentinels):
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
 * With `prefixes` (TrackingOptions), a third connection per node, `watch`, runs `CLIENT TRACKING
 * on REDIRECT <sub id> BCAST PREFIX …`: Redis tells us of every write of a key under them, read or
 * not, and keeps no per-key state for it. A cold read of such a key sent while that session lives
 * is remembered (client/read/recent-reads.ts): should the key surge here, its load takes that reply and
 * asks only the PTTL — one GET per instance for a surge, as a client caching every key it reads
 * has, without caching every key (node-tracker.ts).
 *
 * When the connections open: with prefixes, as soon as the wrapped client is ready (a surge's
 * first read must find the broadcast on); otherwise at the wrapped client's first read (a GET,
 * HGET, HGETALL, MGET or HMGET of any key, cold or hot), once it is ready — every master of a
 * Cluster — so that a key
 * that turns hot later, from this instance's reads or a promotion, is loaded tracked and cached
 * from its first load, and reads are local from the read after it. Not at wrapping: a client
 * that never reads (a subscriber, a writer, a blocking-pop worker, the `duplicate()` made for
 * pub/sub, which is wrapped too) makes no connection of ours, so a server counting its clients
 * sees what a plain client makes. A hot load whose node's connections are still being made (the
 * first reads after they were opened, a few ms) waits for them, until at most `TRACKING_WAIT_MS`
 * after they were opened (concurrent reads share that one load); not up by then, it is read
 * through the user's client and not cached. Connections an adapter gave up on (an ioredis
 * client that cannot reach the node: own-connection.ts) are made again the same way, at the
 * client's next read once it is ready.
 *
 * Each node's live state is a `TrackingSession`; a value loaded under a session is served from
 * the local cache only while that session lives (the wrapper checks it on every cached read). A
 * session ends — and the values loaded under it are dropped at once (`hk.dropLocal`) — when
 * either connection closes, when they stop answering the 1 s heartbeat PING for `deadMs`, and on
 * a flush (an invalidation with a null key list: FLUSHDB/FLUSHALL on that node). Until a new
 * session is up (both connections ready, subscribed, tracking redirected to the new sub id),
 * hot loads go through the user's client and are NOT cached: every read goes to Redis. An
 * invalidation for a key drops that key's value and voids a load of it in flight (its result is
 * not cached: an invalidation overtaking the reply on the other socket, https://github.com/redis/lettuce/issues/3481).
 *
 * Not seen through tracking (Redis 7.0 sends nothing): SWAPDB by an outside client. Tracking is by
 * key name across databases, so a write to `k` in db 1 drops a cached `k` of db 0: too much,
 * never too little.
 */
import type { HotKeyClient } from '../../client/client.ts';
import { NodeTracker } from './node-tracker.ts';
import { hashSlot } from '../hash-slots.ts';
import {
  resolveTrackingOptions,
  type ResolvedTrackingOptions,
  type TrackingConnection,
  type TrackingOptions,
  type TrackingRole,
  type TrackingSession,
} from './tracking-session.ts';

export { NodeTracker } from './node-tracker.ts';
export {
  MAX_TRACKED_PREFIXES,
  TRACKING_WAIT_MS,
  UNTRACKED,
  type TrackedRead,
  type TrackingConnection,
  type TrackingOptions,
  type TrackingRole,
  type TrackingSession,
} from './tracking-session.ts';

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

type Client = TrackedClient;

/** The tracking connections of one wrapped client, one NodeTracker per Redis node, made on first use. */
export class Tracking {
  readonly #client: Client;
  readonly #hk: HotKeyClient;
  readonly #isCluster: boolean;
  readonly #options: ResolvedTrackingOptions;
  readonly #nodes = new Map<string, NodeTracker>();
  /** makes a connection of ours to a node with the client's options (unwrapped) */
  readonly #connect: (nodeKey: string, role: TrackingRole) => TrackingConnection | undefined;
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
    connect: (nodeKey: string, role: TrackingRole) => TrackingConnection | undefined,
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
    this.#options = resolveTrackingOptions(options);
    // a client that read before it was ready (its reads queued) or that connects again after 'end'
    client.on('ready', () => {
      if (this.#reading) this.#openAll();
    });
    // broadcast tracking must be on before a surge's first read: open as soon as the client is ready
    if (this.#options.prefixes.length > 0) this.reading();
  }

  /** Whether Redis tracks some keys by broadcast (`prefixes`): cold reads of them may answer a later load. */
  get watches(): boolean {
    return this.#options.prefixes.length > 0;
  }

  /** The live session that tracks `key` by broadcast on its node, or undefined (tracking.ts, node-tracker.ts). */
  watching(key: string): TrackingSession | undefined {
    return this.nodeFor(key)?.watching(key);
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
      const watch = sub && this.watches ? this.#connect(nodeKey, 'watch') : undefined;
      if (reader === undefined || sub === undefined || (this.watches && watch === undefined)) {
        reader?.disconnect();
        sub?.disconnect();
        return undefined;
      }
      if (!this.#listening) {
        // the client ended (quit, disconnect, retries given up): so do our connections; a later
        // connect() of the client makes new ones once it is ready
        this.#listening = true;
        this.#client.once('end', () => {
          this.#listening = false;
          this.#reading = this.watches; // with prefixes, a later connect() opens them at its 'ready' again
          this.close();
        });
      }
      const made: NodeTracker = new NodeTracker(
        nodeKey,
        { reader, sub, watch },
        this.#hk,
        this.#options,
        this.#onKey,
        this.#onEnd,
        // a connection gave up (its client could not reach the node): the client's next read
        // makes new ones, as its first did (with prefixes, its next 'ready')
        () => {
          if (this.#nodes.get(nodeKey) !== made) return;
          this.#nodes.delete(nodeKey);
          this.#reading = this.watches;
        },
      );
      node = made;
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

/** Redis Cluster hash slot of a key (hash-slots.ts). */
export const slotOf = hashSlot;
