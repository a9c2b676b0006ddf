/**
 * Fair admission to a full key table: which session admitted each tracked key, and how many keys
 * each session holds, so that one session cannot evict the candidates of the others.
 *
 * Every slot records the share (one per session and app) that admitted its key. A share's fair
 * part of the table is `maxKeys / sessions holding keys`. Once the table is full, a session at or
 * over its part may only replace keys of sessions at or over theirs (its own, in a one-connection
 * flood) and is refused otherwise; a session under its part replaces keys of those sessions first,
 * then keys a single instance reported, and keys several instances reported last (slots.ts
 * `evictOne`). A key keeps its admitting share until it is evicted or released; once that session
 * is gone the key belongs to nobody and is judged by its reporters alone.
 *
 * Everything here is O(1) and off the per-record path: it runs only when a new key is admitted.
 */

/** One session's holding in one app's key table. */
export class KeyShare {
  /** keys this session admitted that are still tracked */
  owned = 0;
  constructor(readonly id: number) {}
}

/** share ids, unique across apps' tables, so that a share handed to the wrong table matches nothing */
let nextShareId = 1;

export class KeyShares {
  /** per slot: the id of the share that admitted its key (0: none) */
  owner = new Int32Array(0);
  readonly #live = new Map<number, KeyShare>();
  /** live shares that hold at least one key */
  #holding = 0;
  /** new keys refused: their session was at its part of the full table and none it may replace was sampled */
  refused = 0;
  /** keys evicted from sessions at or over their part of the table */
  evictedOverShare = 0;

  /** A share for a new session (ids are never reused, so a closed session's keys stay ownerless). */
  open(): KeyShare {
    const share = new KeyShare(nextShareId++);
    this.#live.set(share.id, share);
    return share;
  }

  /** The session is gone: its keys stay tracked, owned by nobody. */
  close(share: KeyShare): void {
    if (!this.#live.delete(share.id)) return;
    if (share.owned > 0) this.#holding--;
    share.owned = 0;
  }

  get sessions(): number {
    return this.#live.size;
  }

  grow(capacity: number): void {
    const owner = new Int32Array(capacity);
    owner.set(this.owner);
    this.owner = owner;
  }

  /** True when `share` holds at least its fair part of a table of `maxKeys` slots. */
  atShare(share: KeyShare, maxKeys: number): boolean {
    return share.owned > 0 && share.owned * Math.max(1, this.#holding) >= maxKeys;
  }

  /** The share that admitted the slot's key, if its session is still open. */
  ownerOf(slot: number): KeyShare | undefined {
    const id = this.owner[slot]!;
    return id === 0 ? undefined : this.#live.get(id);
  }

  /** The slot's key was admitted by `share` (none: by hand, by a rule's window, or by a caller without sessions). */
  assign(slot: number, share: KeyShare | undefined): void {
    if (share === undefined || !this.#live.has(share.id)) {
      this.owner[slot] = 0;
      return;
    }
    this.owner[slot] = share.id;
    if (share.owned++ === 0) this.#holding++;
  }

  /** The slot's key is no longer tracked. */
  unassign(slot: number): void {
    const share = this.ownerOf(slot);
    this.owner[slot] = 0;
    if (share !== undefined && --share.owned === 0) this.#holding--;
  }
}
