/**
 * The owner hub's directory of holders, per app: which sessions registered a key (Hold) before
 * serving it from their local cache, and the app's write clock that proves a registered value
 * fresh. An invalidation of a key that is not broadcast-class goes to its holders only (Drops,
 * invalidation-router.ts), so a write nobody holds costs one frame in and one out, whatever the
 * fleet's size. The scheme is a directory of sharers (Censier & Feautrier 1978; Chubby's master
 * "keeps a list of the clients that may have data cached", Burrows 2006, §2.8).
 *
 * Write clock: `w` grows by one for every invalidation of the app processed here (directed or
 * broadcast, flushes too), and `lastWrite(key)` is the `w` of the key's latest one: a mark per
 * key, at most `maxWriteMarks`; dropping the oldest raises a floor that every unmarked key
 * reads, so `lastWrite` never under-states. A Hold whose `since` (the `w` the client had received
 * before it sent the read of the value it would serve) is below `lastWrite(key)` is recorded but
 * answered Written: a write the client may not have seen came between its read and its record.
 *
 * A registration ends with a Drop (one-shot, like a ZooKeeper watch: the client drops the key and
 * registers again at its next surge), a Release, the owner letting go of the key, or the
 * session's end once its lease may no longer run. Bounded per session, per remote address and
 * per app; a refusal is an O(1) counter comparison before any allocation.
 */
import { HoldResult } from '@hotkey/sdk/protocol';

/** What the directory knows of a session (Session implements it). */
export interface HolderSession {
  /** its socket's remote address ('' when unknown): registrations are bounded per address too */
  readonly remote: string;
  /** keys it holds here */
  held: Set<string> | undefined;
}

export interface HoldersOptions {
  /** registrations per session at most @default 1024 */
  maxPerSession?: number;
  /** registrations per remote address at most @default 16384 */
  maxPerAddress?: number;
  /** registrations per app at most @default 262144 */
  maxPerApp?: number;
  /** keys whose last write is remembered exactly at most @default 65536 */
  maxWriteMarks?: number;
  /** whether this hub owns the key (a registration elsewhere is refused NotOwner) @default every key */
  owns?: (key: string) => boolean;
  /** where refusals are counted (the hub's metrics) @default a counter of its own */
  refused?: HoldRefusals;
}

/** Refusals by reason, for the hub's metrics. */
export interface HoldRefusals {
  share: number;
  owner: number;
  full: number;
}

export class Holders<S extends HolderSession = HolderSession> {
  readonly #maxPerSession: number;
  readonly #maxPerAddress: number;
  readonly #maxPerApp: number;
  readonly #maxMarks: number;
  readonly #owns: (key: string) => boolean;
  readonly #byKey = new Map<string, Set<S>>();
  readonly #byAddress = new Map<string, number>();
  /** the latest write's clock per key, oldest first */
  readonly #marks = new Map<string, number>();
  #floor = 0;
  #size = 0;
  /** the app's write clock */
  w = 0;
  readonly refused: HoldRefusals;

  constructor(options: HoldersOptions = {}) {
    this.#maxPerSession = options.maxPerSession ?? 1024;
    this.#maxPerAddress = options.maxPerAddress ?? 16_384;
    this.#maxPerApp = options.maxPerApp ?? 262_144;
    this.#maxMarks = options.maxWriteMarks ?? 65_536;
    this.#owns = options.owns ?? (() => true);
    this.refused = options.refused ?? { share: 0, owner: 0, full: 0 };
  }

  /** registrations now */
  get size(): number {
    return this.#size;
  }

  /** Whether this hub owns `key` now (a registration of it may be recorded here). */
  owns(key: string): boolean {
    return this.#owns(key);
  }

  /** The clock of `key`'s latest write processed here (never below the truth). */
  lastWrite(key: string): number {
    return this.#marks.get(key) ?? this.#floor;
  }

  /** An invalidation of `key` is processed (`flush`: of every key): the clock moves. */
  written(key: string, flush: boolean): void {
    this.w++;
    if (flush) {
      this.#marks.clear();
      this.#floor = this.w;
      return;
    }
    this.#marks.delete(key);
    this.#marks.set(key, this.w);
    if (this.#marks.size > this.#maxMarks) {
      const [oldest, w] = this.#marks.entries().next().value!;
      this.#marks.delete(oldest);
      this.#floor = w;
    }
  }

  /** A registration refused as if this hub did not own the key yet: its ownership fence still holds it. */
  refuseFenced(): HoldResult {
    this.refused.owner++;
    return HoldResult.NotOwner;
  }

  /** Records `session` as a holder of `key` read at `since`; what its Held says of it. */
  hold(session: S, key: string, since: number): HoldResult {
    if (!this.#owns(key)) {
      this.refused.owner++;
      return HoldResult.NotOwner;
    }
    const holders = this.#byKey.get(key);
    if (holders === undefined || !holders.has(session)) {
      if (
        (session.held?.size ?? 0) >= this.#maxPerSession ||
        (this.#byAddress.get(session.remote) ?? 0) >= this.#maxPerAddress
      ) {
        this.refused.share++;
        return HoldResult.OverShare;
      }
      if (this.#size >= this.#maxPerApp) {
        this.refused.full++;
        return HoldResult.Full;
      }
      if (holders === undefined) this.#byKey.set(key, new Set([session]));
      else holders.add(session);
      (session.held ??= new Set()).add(key);
      this.#byAddress.set(session.remote, (this.#byAddress.get(session.remote) ?? 0) + 1);
      this.#size++;
    }
    return since >= this.lastWrite(key) ? HoldResult.Recorded : HoldResult.Written;
  }

  /** The sessions holding `key`, or undefined when none does. */
  holdersOf(key: string): ReadonlySet<S> | undefined {
    return this.#byKey.get(key);
  }

  /** Ends `session`'s registration of `key` (a Release, a Drop sent); false when it held none. */
  release(session: S, key: string): boolean {
    const holders = this.#byKey.get(key);
    if (holders === undefined || !holders.delete(session)) return false;
    if (holders.size === 0) this.#byKey.delete(key);
    session.held?.delete(key);
    const n = (this.#byAddress.get(session.remote) ?? 1) - 1;
    if (n > 0) this.#byAddress.set(session.remote, n);
    else this.#byAddress.delete(session.remote);
    this.#size--;
    return true;
  }

  /** The session is gone and its lease can no longer run: every registration of it ends. */
  gone(session: S): void {
    if (session.held === undefined) return;
    for (const key of [...session.held]) this.release(session, key);
    session.held = undefined;
  }

  /** Registered keys `keep` says no, with their holders; their registrations end (the owner lets go). */
  *releaseWhere(keep: (key: string) => boolean): Generator<[string, S[]]> {
    for (const [key, holders] of [...this.#byKey]) {
      if (keep(key)) continue;
      const sessions = [...holders];
      for (const s of sessions) this.release(s, key);
      yield [key, sessions];
    }
  }
}
