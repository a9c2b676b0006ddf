/**
 * Hub links and membership: one HubConnection per hub URL, the welcomed ones as links by hub id,
 * and the key ownership they imply. Seeds are the URLs the user gave; the hubs tell the rest
 * (Members). Two URLs that reach the same hub keep one socket; a duplicate or moved seed goes
 * dormant and is tried again once every hub is lost.
 */
import { Ownership } from '../ownership.ts';
import { HubConnection, type ConnectionHandler } from '../wire/connection.ts';
import type { Lease } from '../cache/hot-set.ts';
import { CloseCode, DEFAULT_LEASE_MS, type Hello, type Member, type Welcome } from '../wire/protocol.ts';
import type { ClientTlsOptions } from '../options.ts';

/** A welcomed hub: its connection, where its broadcast sequence stands, and its lease. */
export interface HubLink {
  hub: string;
  conn: HubConnection;
  /**
   * This link's lease: a new object per Welcome, so values cached under an older link of the same
   * hub are never served under this one. Values it vouches for are served while `until` > clock.
   */
  lease: Lease;
  /** the lease the hub grants, learnt from its Grants (DEFAULT_LEASE_MS until the first) */
  leaseMs: number;
  /** Lease requests not answered yet, oldest first: id and the clock reading when sent */
  leaseAsks: { id: number; sentAt: number }[];
  /** clock reading of the last Lease request sent */
  leaseAskedAt: number;
  /** clock reading until which the link keeps asking for its lease (leases.ts `wantLease`) */
  leaseWantedUntil: number;
  /** seq of the last broadcast applied */
  lastSeq: number;
  /** a Resync was sent; its Snapshot has not arrived yet */
  resyncing: boolean;
  /** the protocol version this link speaks (Welcome `v`): from 3, local surges register (holds.ts) */
  v: number;
  /** the highest write clock (`w`) received from the hub on this link: a Hold's `since` */
  w: number;
  /** the `d` of the last Drop applied */
  dropsApplied: number;
}

export interface HubLinksOptions {
  seeds: readonly string[];
  hello: Hello;
  pingIntervalMs: number;
  quietPingIntervalMs: number;
  livenessTimeoutMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** for wss:// hubs */
  tls?: ClientTlsOptions | undefined;
  handler: ConnectionHandler;
  /** a welcomed hub is gone: its link is removed and its keys have moved to the other hubs */
  onLost: (hub: string) => void;
}

/** what a hub URL looks like (seeds and members alike) */
export const HUB_URL = /^wss?:\/\/[^\s]+$/;

export class HubLinks {
  readonly #opts: HubLinksOptions;
  readonly #seeds: readonly string[];
  readonly #conns = new Map<string, HubConnection>();
  readonly #links = new Map<string, HubLink>();
  readonly #dormantSeeds = new Set<string>();
  #ownership = new Ownership([]);
  #epoch = -1;

  constructor(options: HubLinksOptions) {
    this.#opts = options;
    this.#seeds = options.seeds;
  }

  /** welcomed hubs */
  get size(): number {
    return this.#links.size;
  }

  get(hub: string): HubLink | undefined {
    return this.#links.get(hub);
  }

  /** Ids of the welcomed hubs. */
  hubs(): string[] {
    return [...this.#links.keys()];
  }

  /** The welcomed hub that owns `key`, if any hub is welcomed. */
  owner(key: string): string | undefined {
    return this.#ownership.owner(key);
  }

  /** The link to the welcomed hub that owns `key`, if any hub is welcomed. */
  ownerLink(key: string): HubLink | undefined {
    const hub = this.#ownership.owner(key);
    return hub === undefined ? undefined : this.#links.get(hub);
  }

  /** Every welcomed link. */
  links(): IterableIterator<HubLink> {
    return this.#links.values();
  }

  /** The only welcomed hub when there is exactly one (it owns every key). */
  single(): string | undefined {
    return this.#links.size === 1 ? this.#links.keys().next().value : undefined;
  }

  /** The link `conn` carries, if it is the live one of its hub. */
  linkOf(conn: HubConnection): HubLink | undefined {
    const hub = conn.hubId;
    const link = hub === undefined ? undefined : this.#links.get(hub);
    return link !== undefined && link.conn === conn ? link : undefined;
  }

  /** Connects to every seed. */
  start(): void {
    for (const url of this.#seeds) this.#connect(url);
  }

  /** A hub welcomed `conn`: true when it is now a link, false when it duplicates one (then closed). */
  admit(conn: HubConnection, welcome: Welcome): boolean {
    const existing = this.#links.get(welcome.hub);
    if (existing !== undefined && existing.conn !== conn) {
      // Two URLs reach the same hub: keep one socket. A duplicate seed sleeps until we lose every hub.
      conn.close(CloseCode.Normal, 'duplicate connection');
      this.#conns.delete(conn.url);
      if (this.#seeds.includes(conn.url)) this.#dormantSeeds.add(conn.url);
      return false;
    }
    this.#links.set(welcome.hub, {
      hub: welcome.hub,
      conn,
      lease: { until: Number.NEGATIVE_INFINITY },
      leaseMs: DEFAULT_LEASE_MS,
      leaseAsks: [],
      leaseAskedAt: Number.NEGATIVE_INFINITY,
      leaseWantedUntil: Number.NEGATIVE_INFINITY,
      lastSeq: welcome.seq,
      resyncing: false,
      v: welcome.v,
      w: welcome.w ?? 0,
      dropsApplied: 0,
    });
    this.#ownership = new Ownership(this.#links.keys());
    return true;
  }

  /** `conn`'s socket closed with `code`; it reconnects by itself unless the hub left the cluster. */
  down(conn: HubConnection, code: number): void {
    const hub = conn.hubId;
    const link = hub === undefined ? undefined : this.#links.get(hub);
    if (code === CloseCode.Leaving && !this.#seeds.includes(conn.url)) {
      // The hub left the cluster: its keys move. Members brings it back if it rejoins.
      conn.close();
      this.#conns.delete(conn.url);
    }
    if (hub === undefined || link === undefined || link.conn !== conn) return;
    this.#lose(hub);
    this.#wakeSeedsIfAlone();
  }

  /** With no hub left, the dormant seeds are tried again. */
  #wakeSeedsIfAlone(): void {
    if (this.#links.size > 0 || this.#dormantSeeds.size === 0) return;
    for (const url of this.#dormantSeeds) if (!this.#conns.has(url)) this.#connect(url);
    this.#dormantSeeds.clear();
  }

  /** `conn` stopped for good (a fatal refusal). */
  forget(conn: HubConnection): void {
    this.#conns.delete(conn.url);
  }

  /**
   * Connects to every member with a URL we do not reach yet; drops members that left. A member
   * we are not welcomed by, listed under another URL than the one we last reached it at, has
   * moved (say, restarted on another port): the old connection would retry a dead address
   * forever and keep the new one from being made, so it goes (a seed URL goes dormant, to be
   * tried again once every hub is lost, like a duplicate seed). False for an older epoch.
   *
   * A seed's connection stays whatever another hub's list says (lists disagree while a hub
   * starts or loses Redis), but not when its own hub sends a list without itself: that hub is
   * leaving and owns no key from now on. Kept until the hub's own close, the connection would
   * carry the hub's keys' reports there after its last handoff round, and they would be lost.
   * `from`: the hub that sent the list.
   */
  applyMembers(epoch: number, members: readonly Member[], from: string): boolean {
    if (epoch < this.#epoch) return false;
    this.#epoch = epoch;
    const ids = new Set(members.map((m) => m.id));
    for (const [url, conn] of this.#conns) {
      if (conn.hubId === undefined || ids.has(conn.hubId)) continue;
      if (this.#seeds.includes(url) && conn.hubId !== from) continue;
      conn.close(CloseCode.Normal, 'hub left the cluster');
      this.#conns.delete(url);
      if (this.#seeds.includes(url)) this.#dormantSeeds.add(url);
      if (this.#links.get(conn.hubId)?.conn === conn) this.#lose(conn.hubId);
    }
    this.#wakeSeedsIfAlone();
    for (const m of members) {
      if (m.url === '' || this.#links.has(m.id)) continue;
      const waiting = this.#conns.get(m.url);
      if (waiting !== undefined) {
        // a listed hub is up: a connection backing off from it (a restart) need not wait its turn
        waiting.retryNow();
        continue;
      }
      if (!HUB_URL.test(m.url)) continue;
      for (const [url, conn] of this.#conns) {
        if (conn.hubId !== m.id) continue;
        conn.close(CloseCode.Normal, 'hub moved to another URL');
        this.#conns.delete(url);
        if (this.#seeds.includes(url)) this.#dormantSeeds.add(url);
      }
      this.#connect(m.url);
    }
    return true;
  }

  /** Closes every socket (1000) for good. */
  close(): void {
    for (const conn of this.#conns.values()) conn.close(CloseCode.Normal, 'client closed');
    this.#conns.clear();
    this.#links.clear();
    this.#ownership = new Ownership([]);
  }

  #connect(url: string): void {
    const o = this.#opts;
    const conn = new HubConnection(
      {
        url,
        hello: o.hello,
        pingIntervalMs: o.pingIntervalMs,
        quietPingIntervalMs: o.quietPingIntervalMs,
        livenessTimeoutMs: o.livenessTimeoutMs,
        backoffMinMs: o.reconnectMinMs,
        backoffMaxMs: o.reconnectMaxMs,
        ...(o.tls === undefined ? {} : { tls: o.tls }),
      },
      o.handler,
    );
    this.#conns.set(url, conn);
    conn.start();
  }

  #lose(hub: string): void {
    this.#links.delete(hub);
    this.#ownership = new Ownership(this.#links.keys());
    this.#opts.onLost(hub);
  }
}
