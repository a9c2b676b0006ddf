/**
 * One Redis node's tracking connections and the session they hold up (tracking.ts says why and
 * how they are used): `reader` in OPTIN mode for hot loads, `sub` subscribed to the invalidation
 * channel both redirect to, and with `prefixes` a `watch` connection in BCAST mode for them.
 *
 * A session is live once every connection is ready, `sub` is subscribed and each tracking mode
 * points at `sub`'s current id. It ends — and every value loaded under it is dropped
 * (`hk.dropLocal`) — when any connection closes, when they stop answering the heartbeat PING for
 * `deadMs`, and on a flush (an invalidation with a null key list).
 *
 * The heartbeat runs once the session vouched for a load (a value cached under it may be served
 * while an invalidation it cannot hear is due): a session nothing was loaded under has nothing
 * to drop, and its connections stay quiet (a client that only read cold keys pings no one). Its
 * first load starts it with `deadMs` of credit, so a write made after a load is unheard for at
 * most `deadMs` + `pingMs`, as with a heartbeat that ran all along. With `watch`, it runs from the
 * start: a cold read's reply kept under the session may answer a load later. A connection that gives up
 * reconnecting ('end') closes the tracker: tracking makes a new one when the node is wanted again.
 */
import { adapterView, type AdapterView } from '../../client/adapter-view.ts';
import type { HotKeyClient } from '../../client/client.ts';
import { keyName } from '../identity.ts';
import {
  CHANNEL,
  TRACKING_WAIT_MS,
  type ResolvedTrackingOptions,
  type TrackedRead,
  type TrackingConnection,
  type TrackingSession,
} from './tracking-session.ts';

/** The connections of one node: `watch` only when prefixes are tracked by broadcast. */
export interface NodeConnections {
  reader: TrackingConnection;
  sub: TrackingConnection;
  watch: TrackingConnection | undefined;
}

export class NodeTracker {
  readonly nodeKey: string;
  /** the current session; a dead one until the connections are up and tracking is redirected */
  session: TrackingSession = { live: false };
  /** invalidation messages heard (keys and flushes), for tests and stats */
  invalidations = 0;
  readonly #reader: TrackingConnection;
  readonly #sub: TrackingConnection;
  readonly #watch: TrackingConnection | undefined;
  readonly #connections: TrackingConnection[];
  readonly #hk: HotKeyClient;
  readonly #view: AdapterView;
  readonly #options: ResolvedTrackingOptions;
  readonly #onKey: (key: string) => void;
  readonly #onEnd: (session: TrackingSession) => void;
  readonly #onClose: () => void;
  /** the sub connection's CLIENT ID once it is subscribed, per connection incarnation */
  #subscribed: Promise<number> | undefined;
  /** bumped by every loss and every (re)establishment: a stale establishment never goes live */
  #attempt = 0;
  #answeredAt = performance.now();
  /** the heartbeat is on: the session vouched for a load, or broadcast tracking keeps replies */
  #beating: boolean;
  readonly #timer: NodeJS.Timeout;
  #closed = false;
  /** a session went live once: the connections made on first use are up */
  #everLive = false;
  readonly #openedAt = performance.now();
  #wentLive!: () => void;
  readonly #firstLive = new Promise<void>((resolve) => (this.#wentLive = resolve));

  constructor(
    nodeKey: string,
    connections: NodeConnections,
    hk: HotKeyClient,
    options: ResolvedTrackingOptions,
    onKey: (key: string) => void = () => {},
    onEnd: (session: TrackingSession) => void = () => {},
    onClose: () => void = () => {},
  ) {
    const { reader, sub, watch } = connections;
    this.nodeKey = nodeKey;
    this.#onKey = onKey;
    this.#onEnd = onEnd;
    this.#onClose = onClose;
    this.#reader = reader;
    this.#sub = sub;
    this.#watch = watch;
    this.#connections = watch === undefined ? [reader, sub] : [reader, sub, watch];
    this.#beating = watch !== undefined;
    this.#hk = hk;
    this.#view = adapterView(hk);
    this.#options = options;
    const fault = (err: Error) => options.onError(err);
    for (const c of this.#connections) {
      c.on('error', fault);
      c.on('end', () => this.close());
    }
    reader.on('close', () => this.#lose());
    watch?.on('close', () => this.#lose());
    sub.on('close', () => {
      this.#subscribed = undefined;
      this.#lose();
    });
    reader.on('ready', () => this.#establish());
    watch?.on('ready', () => this.#establish());
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
   * The live session when Redis tracks `key` by broadcast on this node (a prefix covers it): a
   * write of the key from anywhere reaches us from now on, so a cold read sent now may answer a
   * later hot load of it. Undefined otherwise.
   */
  watching(key: string): TrackingSession | undefined {
    if (this.#watch === undefined || !this.session.live) return undefined;
    for (const p of this.#options.prefixes) if (key.startsWith(p)) return this.session;
    return undefined;
  }

  /**
   * A tracked load: value, PTTL and the session it was opted in under, in one transaction on the
   * reader. Rejects when the session is down or any reply is an error (then it is no tracked read).
   * A GET of a key a cold read under this session answered (and nothing dropped since:
   * client/read/recent-reads.ts) takes that reply and asks only the key's PTTL.
   */
  async load(kind: 'get' | 'hgetall', key: string, db: number | undefined): Promise<TrackedRead> {
    const session = this.session;
    if (!session.live) throw new Error(`tracking of ${this.nodeKey} is down`);
    if (kind === 'get' && this.#watch !== undefined) {
      const reply = this.#view.recentRead(key, session, db);
      const read = reply === undefined ? undefined : await this.#fromReply(reply, key, db, session);
      if (read !== undefined) return read;
    }
    this.#vouching();
    const replies = await this.#exec(db, [
      ['client', 'caching', 'yes'],
      [kind, key],
      ['pttl', key],
    ]);
    return { value: replies[1]![1], pttl: replies[2]![1], session };
  }

  /**
   * A cold read's reply as a tracked read, with the key's PTTL asked now on the reader (this very
   * node: a key whose slot moved is refused with MOVED, and the load falls back). Undefined when
   * the reply failed or was no string, or the PTTL says the key changed existence since (gone
   * with a value read, there with none read): then the load reads the key itself.
   */
  async #fromReply(
    reply: Promise<unknown>,
    key: string,
    db: number | undefined,
    session: TrackingSession,
  ): Promise<TrackedRead | undefined> {
    const value = await reply.catch(() => undefined);
    if (typeof value !== 'string' && value !== null) return undefined;
    const replies = await this.#exec(db, [['pttl', key]]).catch(() => undefined);
    const pttl = replies?.[0]?.[1];
    if (typeof pttl !== 'number' || (value === null) !== (pttl === -2) || !session.live) return undefined;
    this.#view.recentReadUsed();
    return { value, pttl, session };
  }

  /** The session is about to vouch for a load: the heartbeat runs from now, with `deadMs` of credit. */
  #vouching(): void {
    if (this.#beating) return;
    this.#beating = true;
    this.#answeredAt = performance.now();
  }

  /**
   * `commands` in one MULTI on the reader, after a SELECT of `db` (a standalone node): their
   * replies, or a rejection when any failed or the transaction was discarded
   */
  async #exec(db: number | undefined, commands: string[][]): Promise<Array<[Error | null, unknown]>> {
    const all = db === undefined ? commands : [['select', String(db)], ...commands];
    const replies = (await this.#reader.multi(all).exec()) ?? [];
    if (replies.length !== all.length) throw new Error('tracked load: transaction discarded');
    for (const [err] of replies) if (err) throw err;
    return db === undefined ? replies : replies.slice(1);
  }

  /** Ends the session for good and closes the connections; `onClose` hears it (once). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#lose();
    for (const c of this.#connections) c.disconnect();
    this.#onClose();
  }

  #ready(): boolean {
    return this.#connections.every((c) => c.status === 'ready');
  }

  async #establish(): Promise<void> {
    const attempt = ++this.#attempt;
    const subscribed = this.#subscribed;
    if (this.#closed || subscribed === undefined || this.#reader.status !== 'ready') return;
    if (this.#watch !== undefined && this.#watch.status !== 'ready') return;
    try {
      const subId = String(await subscribed);
      await this.#reader.client('TRACKING', 'ON', 'REDIRECT', subId, 'OPTIN');
      const watch = this.#watch;
      if (watch !== undefined) {
        // Redis refuses a prefix a connection tracks already, and keeps the old redirect until
        // tracking is off: off first (no session is live meanwhile, so nothing is missed)
        await watch.client('TRACKING', 'OFF');
        const prefixes = this.#options.prefixes;
        const args = prefixes.length === 1 && prefixes[0] === '' ? [] : prefixes.flatMap((p) => ['PREFIX', p]);
        await watch.client('TRACKING', 'ON', 'REDIRECT', subId, 'BCAST', ...args);
      }
    } catch (err) {
      this.#options.onError(err as Error);
      return;
    }
    if (attempt !== this.#attempt || this.#closed || !this.#ready()) return;
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
    this.#beating = this.#watch !== undefined; // nothing is vouched for now
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

  /** Every connection must keep answering: a silent one (a frozen link) ends the session. */
  #beat(): void {
    if (!this.session.live) {
      // an establishment that failed (a refused CLIENT TRACKING) is retried here
      if (!this.#closed && this.#ready()) void this.#establish();
      return;
    }
    if (!this.#beating) return;
    if (performance.now() - this.#answeredAt > this.#options.deadMs) {
      this.#options.onError(
        new Error(`tracking connections of ${this.nodeKey} silent for ${this.#options.deadMs} ms: reconnecting`),
      );
      this.#lose();
      for (const c of this.#connections) c.disconnect(true);
      return;
    }
    Promise.all(this.#connections.map((c) => c.ping())).then(
      () => {
        this.#answeredAt = performance.now();
      },
      () => {},
    );
  }
}
