/**
 * The HotKeyClient events every wrapped Redis client's parts react to (a promotion switches a
 * key's write-hot mode, a demotion folds shards and deletes replica copies, hk's close ends the
 * tracking connections), heard through ONE listener per event per HotKeyClient and fanned out
 * here to the wraps that are open. A service that wraps many clients with one hk (a pool or a
 * client per shard or database, `duplicate()`s for pub/sub) adds no listener on hk per wrap, so
 * Node's MaxListenersExceededWarning never fires and nothing accumulates on hk.
 *
 * A wrap is a member while its client is open: it leaves at the client's 'end' (quit,
 * disconnect, retries given up) and joins again at its next 'ready' (a `connect()` after the
 * end). Members are held weakly: the registry never keeps a client alive, and a member collected
 * without an 'end' is dropped by a FinalizationRegistry. So the registry holds at most the
 * wrapped clients that are alive and not ended. A member that joins after hk closed hears the
 * close at once.
 */
import type { HotKeyClient, PromoteInfo } from '../client/client.ts';

/** What a wrapped client's part hears of its HotKeyClient; every handler is optional. */
export interface WrapMember {
  promoted?(key: string, info: PromoteInfo): void;
  demoted?(key: string): void;
  /** hk.close() ran (once; at once for a member joining after it) */
  hkClosed?(): void;
}

/** The wrapped client's open and end, as the adapters' clients emit them (ioredis as it is; node-redis through a view). */
export interface WrapLifecycle {
  /** 'end': wrapped after its end (joins at its next 'ready') */
  readonly status?: string;
  on(event: 'ready' | 'end', listener: () => void): unknown;
}

/** One wrap's parts: a unit of the registry. */
class Wrap {
  readonly members: readonly WrapMember[];
  /** its entry in the registry while joined */
  ref: WeakRef<Wrap> | undefined;
  constructor(members: readonly WrapMember[]) {
    this.members = members;
  }
}

export class WrapEvents {
  readonly #joined = new Set<WeakRef<Wrap>>();
  readonly #collected = new FinalizationRegistry<WeakRef<Wrap>>((ref) => this.#joined.delete(ref));
  #closed = false;

  /** The registry of `hk`, made (and subscribed to hk, once) on first use. */
  static of(hk: HotKeyClient): WrapEvents {
    let events = byClient.get(hk);
    if (events === undefined) {
      events = new WrapEvents();
      byClient.set(hk, events);
      const own = events;
      hk.on('promote', (key, info) => own.#each((m) => m.promoted?.(key, info)));
      hk.on('demote', (key) => own.#each((m) => m.demoted?.(key)));
      hk.once('close', () => {
        own.#closed = true;
        own.#each((m) => m.hkClosed?.());
        own.#joined.clear(); // nothing is emitted after the close
      });
    }
    return events;
  }

  /** Wraps open now (for stats and tests). */
  get size(): number {
    return this.#joined.size;
  }

  /**
   * Makes `members` (one wrapped client's parts; undefined entries are skipped) hear hk's events
   * while `client` is open. The client's own listeners hold the wrap, so it lives as long as the
   * client does, and no longer.
   */
  follow(client: WrapLifecycle, members: ReadonlyArray<WrapMember | undefined>): void {
    const wrap = new Wrap(members.filter((m) => m !== undefined));
    if (this.#closed || client.status !== 'end') this.#join(wrap);
    client.on('end', () => {
      if (wrap.ref === undefined) return;
      this.#joined.delete(wrap.ref);
      this.#collected.unregister(wrap);
      wrap.ref = undefined;
    });
    client.on('ready', () => {
      if (wrap.ref === undefined) this.#join(wrap);
    });
  }

  #join(wrap: Wrap): void {
    if (this.#closed) {
      for (const m of wrap.members) m.hkClosed?.();
      return;
    }
    const ref = new WeakRef(wrap);
    wrap.ref = ref;
    this.#joined.add(ref);
    this.#collected.register(wrap, ref, wrap);
  }

  #each(call: (member: WrapMember) => void): void {
    for (const ref of this.#joined) {
      const wrap = ref.deref();
      if (wrap === undefined) {
        this.#joined.delete(ref);
        continue;
      }
      for (const m of wrap.members) call(m);
    }
  }
}

const byClient = new WeakMap<HotKeyClient, WrapEvents>();
