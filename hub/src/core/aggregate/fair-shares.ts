/**
 * Fair admission to a full key table: which session admitted each tracked key, and how many keys
 * each session and each remote address holds, so that neither one session nor many sessions from
 * one address can evict the candidates of the others.
 *
 * Every slot records the share (one per session and app) that admitted its key; every share
 * belongs to its session's remote address (`addressGroup`: an IPv4 address, or an IPv6 /64). The
 * table is divided first among the addresses holding keys, then each address's part among its
 * sessions holding keys: a session's fair part is `maxKeys / addresses / sessions of its address`.
 * With every session on one address (a proxy in front, or a test on loopback) that is
 * `maxKeys / sessions`, the per-session rule alone.
 *
 * Once the table is full, a session at or over its part, or one whose address is at or over the
 * address's part, may only replace keys of sessions at or over theirs (its own, in a flood) and
 * is refused otherwise; any other session replaces keys of those sessions first, then keys a
 * single instance reported, and keys several instances reported last (window-slab.ts `evictOne`). So a
 * flooder that opens a thousand connections gets one address's part, not a thousand sessions'. A
 * key keeps its admitting share until it is evicted or released; once that session is gone the
 * key belongs to nobody and is judged by its reporters alone.
 *
 * Everything here is O(1) and off the per-record path: it runs only when a new key is admitted.
 */

/** The sessions of one remote address in one app's key table. */
export class AddressShare {
  /** keys its open sessions admitted that are still tracked */
  owned = 0;
  /** its open sessions holding at least one key */
  holding = 0;
  /** its open sessions */
  sessions = 0;
  constructor(readonly address: string) {}
}

/** One session's holding in one app's key table. */
export class FairShare {
  /** keys this session admitted that are still tracked */
  owned = 0;
  constructor(
    readonly id: number,
    readonly address: AddressShare,
  ) {}
}

/** share ids, unique across apps' tables, so that a share handed to the wrong table matches nothing */
let nextShareId = 1;

/**
 * What counts as one address for fairness: an IPv4 address (an IPv4-mapped IPv6 one unwrapped),
 * or the /64 of an IPv6 address — the prefix one host or one subscriber is normally given
 * (RFC 4291 §2.5.4, 64-bit interface identifiers; RFC 6177), so that a host's many addresses
 * count once. Anything else (no address known: '') is its own group.
 */
export function addressGroup(address: string): string {
  const v4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (v4 !== null) return v4[1]!;
  if (!address.includes(':')) return address;
  const bare = address.split('%')[0]!.toLowerCase();
  const groups = (part: string) =>
    part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]));
  const [head = '', tail] = bare.split('::');
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all =
    tail === undefined
      ? left
      : [...left, ...new Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${all
    .slice(0, 4)
    .map((g) => (Number.parseInt(g, 16) || 0).toString(16))
    .join(':')}::/64`;
}

export class FairShares {
  /** per slot: the id of the share that admitted its key (0: none) */
  owner = new Int32Array(0);
  readonly #live = new Map<number, FairShare>();
  readonly #addresses = new Map<string, AddressShare>();
  /** addresses whose open sessions hold at least one key */
  #holdingAddresses = 0;
  /** new keys refused: their session (or its address) was at its part of the full table and none it may replace was sampled */
  refused = 0;
  /** of `refused`, those whose session was under its own part but its address at the address's */
  refusedForAddress = 0;
  /** keys evicted from sessions at or over their part of the table */
  evictedOverShare = 0;

  /**
   * A share for a new session (ids are never reused, so a closed session's keys stay ownerless).
   * @param [address=''] the session's remote address (grouped by `addressGroup`)
   */
  open(address = ''): FairShare {
    const group = addressGroup(address);
    let owner = this.#addresses.get(group);
    if (owner === undefined) this.#addresses.set(group, (owner = new AddressShare(group)));
    owner.sessions++;
    const share = new FairShare(nextShareId++, owner);
    this.#live.set(share.id, share);
    return share;
  }

  /** The session is gone: its keys stay tracked, owned by nobody. */
  close(share: FairShare): void {
    if (!this.#live.delete(share.id)) return;
    const address = share.address;
    if (share.owned > 0) {
      address.holding--;
      address.owned -= share.owned;
      if (address.owned === 0) this.#holdingAddresses--;
    }
    share.owned = 0;
    if (--address.sessions === 0) this.#addresses.delete(address.address);
  }

  get sessions(): number {
    return this.#live.size;
  }

  /** addresses whose open sessions hold keys */
  get addresses(): number {
    return this.#holdingAddresses;
  }

  grow(capacity: number): void {
    const owner = new Int32Array(capacity);
    owner.set(this.owner);
    this.owner = owner;
  }

  /** True when `share` holds at least its fair part of a table of `maxKeys` slots. */
  atShare(share: FairShare, maxKeys: number): boolean {
    return (
      share.owned > 0 &&
      share.owned * Math.max(1, this.#holdingAddresses) * Math.max(1, share.address.holding) >= maxKeys
    );
  }

  /** True when the sessions of `share`'s address together hold at least the address's part. */
  addressAtShare(share: FairShare, maxKeys: number): boolean {
    const address = share.address;
    return address.owned > 0 && address.owned * Math.max(1, this.#holdingAddresses) >= maxKeys;
  }

  /** The share that admitted the slot's key, if its session is still open. */
  ownerOf(slot: number): FairShare | undefined {
    const id = this.owner[slot]!;
    return id === 0 ? undefined : this.#live.get(id);
  }

  /** The slot's key was admitted by `share` (none: by hand, by a rule's window, or by a caller without sessions). */
  assign(slot: number, share: FairShare | undefined): void {
    if (share === undefined || !this.#live.has(share.id)) {
      this.owner[slot] = 0;
      return;
    }
    this.owner[slot] = share.id;
    const address = share.address;
    if (share.owned++ === 0) address.holding++;
    if (address.owned++ === 0) this.#holdingAddresses++;
  }

  /** The slot's key is no longer tracked. */
  unassign(slot: number): void {
    const share = this.ownerOf(slot);
    this.owner[slot] = 0;
    if (share === undefined) return;
    const address = share.address;
    if (--share.owned === 0) address.holding--;
    if (--address.owned === 0) this.#holdingAddresses--;
  }
}
