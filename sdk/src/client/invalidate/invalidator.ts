/**
 * The invalidation API behind `invalidate()`, `invalidateAll()` and `updateMark()`: what goes to
 * the key's owner hub, and what is resent when that hub is lost. The local drop comes first, so
 * this instance never serves the old value while the hub's ack is on its way; the acks themselves
 * are matched in invalidations.ts. With no owner hub reachable (none connected yet, or the owner
 * lost with nobody to take its keys) an invalidation is held and sent when one is welcomed
 * (`linked`): rejecting it at once would let a caller that ignores the rejection (or a wrapper
 * that swallowed it) treat the write as acknowledged while instances still serve the old value.
 */
import { MsgType, type InvalidateRequest } from '../../wire/protocol.ts';
import { PendingInvalidations } from './invalidations.ts';
import type { HubLinks } from '../links.ts';
import type { ValuePush } from '../read/push.ts';

/** `invalidate(key, options)` */
export interface InvalidateOptions {
  /**
   * The key's new value (value push, Redisson's UPDATE): if the key is hot and its rule pushes
   * values (`push: true`), every instance drops the old value and caches this one in the same
   * step, instead of reloading. Only a value read back after the write, through a source that
   * vouches for it, belongs here (the ioredis wrapper's `writes: 'update'`). A value that is not
   * pushable or over `maxPushBytes`, or a key not hot and shared here: a plain invalidation.
   * @default undefined (a plain invalidation)
   */
  value?: unknown;
  /**
   * With `value`: `updateMark(key)` taken before the value was written (or read back). The hub
   * pushes the value only if no other write of the key went through it since the mark (one that
   * may have reached the store later, making this value the older); else it invalidates plainly.
   * @default a mark taken now (right only when nobody else writes the key meanwhile)
   */
  mark?: UpdateMark;
  /**
   * Only the value this instance pushed (value push: it vouches for it and heard a write of the
   * key): when the hub holds a newer value or none, nothing is broadcast and the ack comes at once.
   * @default false
   */
  pushed?: boolean;
}
/** Where the key's owner hub's broadcasts stood for this instance (`updateMark`); opaque. */
export interface UpdateMark {
  readonly hub: string | undefined;
  readonly link: object | undefined;
  readonly seq: number;
}
/** What a resolved `invalidate()` says. */
export interface InvalidateResult {
  /** the hub that acknowledged */
  hub: string;
  /**
   * instances that did not confirm the drop and were fenced instead: the hub waited until their
   * lease lapsed (they can no longer serve the old value). Empty when everyone confirmed.
   */
  fenced: string[];
  /** ms the hub took to acknowledge */
  ms: number;
}

export interface InvalidatorOptions {
  links: HubLinks;
  push: ValuePush;
  /** an invalidation not acked within this rejects with HK_ERR_TIMEOUT */
  timeoutMs: number;
  /** invalidations awaiting their ack at most */
  maxPending: number;
  /** drops one key's cached value and voids its load in flight, here */
  dropValue: (key: string) => void;
  /** drops every cached value here (hot keys stay hot) */
  dropAll: () => void;
}

export class Invalidator {
  readonly #links: HubLinks;
  readonly #push: ValuePush;
  readonly #dropValue: (key: string) => void;
  readonly #dropAll: () => void;
  readonly #pending: PendingInvalidations;
  /** ids of pending invalidations that are namespace flushes (`invalidateAll`), resent as such */
  readonly #flushIds = new Set<number>();
  /** invalidate() and invalidateAll() calls that reached a hub or were refused for want of one */
  count = 0;

  constructor(options: InvalidatorOptions) {
    this.#links = options.links;
    this.#push = options.push;
    this.#dropValue = options.dropValue;
    this.#dropAll = options.dropAll;
    this.#pending = new PendingInvalidations({ timeoutMs: options.timeoutMs, maxPending: options.maxPending });
  }

  /** invalidations awaiting their ack now */
  get pending(): number {
    return this.#pending.size;
  }

  /** invalidations that timed out */
  get timeouts(): number {
    return this.#pending.timeouts;
  }

  /** `HotKeyClient.invalidate` past its argument checks. */
  invalidate(key: string, options: InvalidateOptions | undefined): Promise<InvalidateResult> {
    const hub = this.#links.owner(key);
    const mark = options?.value === undefined ? undefined : (options.mark ?? this.updateMark(key));
    // a mark from another hub, or from before a reconnect, counts in another seq: plain
    const update =
      mark === undefined || hub === undefined || mark.hub !== hub || mark.link !== this.#links.get(hub)
        ? undefined
        : this.#push.packUpdate(key, options!.value);
    this.#dropValue(key);
    this.count++;
    if (update === undefined) {
      const pushed = options?.pushed === true;
      return this.#pending.add(key, hub, (id, to) =>
        this.#links
          .get(to)
          ?.conn.send(
            pushed ? { t: MsgType.InvalidateRequest, id, key, pushed } : { t: MsgType.InvalidateRequest, id, key },
          ),
      );
    }
    const request = { t: MsgType.InvalidateRequest, key, value: update.bytes, since: mark!.seq } as InvalidateRequest;
    if (update.form !== undefined) request.form = update.form;
    const done = this.#pending.add(key, hub, (id, to) => this.#links.get(to)?.conn.send({ ...request, id }));
    this.#push.vouch(key, update);
    return done;
  }

  /** `HotKeyClient.updateMark`. */
  updateMark(key: string): UpdateMark {
    const link = this.#links.ownerLink(key);
    return { hub: link?.hub, link, seq: link?.lastSeq ?? 0 };
  }

  /** `HotKeyClient.invalidateAll` past its argument checks. */
  invalidateAll(namespace: string): Promise<InvalidateResult> {
    this.#dropAll();
    this.count++;
    const hub = this.#links.owner(namespace);
    let sentId = 0;
    const done = this.#pending.add(
      namespace,
      hub,
      (id, to) => this.#links.get(to)?.conn.send({ t: MsgType.InvalidateRequest, id, key: namespace, flush: true }),
      (id) => {
        // sent or held, it is resent as a flush
        sentId = id;
        this.#flushIds.add(id);
      },
    );
    const forget = () => this.#flushIds.delete(sentId);
    done.then(forget, forget);
    return done;
  }

  /** The hub's Ack of invalidation `id`. */
  ack(id: number, result: InvalidateResult): void {
    this.#pending.ack(id, result);
  }

  /** Invalidations a lost hub will never ack go to the key's new owner, or are held until one is welcomed. */
  hubLost(hub: string): void {
    this.#pending.hubLost(hub, (id, key) => this.#resend(id, key));
  }

  /** A hub was welcomed: held invalidations go to their keys' owners now. */
  linked(): void {
    this.#pending.sendHeld((id, key) => this.#resend(id, key));
  }

  /** Sends invalidation `id` of `key` (a plain one: a value push is not repeated) to its owner now; the hub, or undefined. */
  #resend(id: number, key: string): string | undefined {
    const owner = this.#links.owner(key);
    const link = owner === undefined ? undefined : this.#links.get(owner);
    const request = this.#flushIds.has(id)
      ? { t: MsgType.InvalidateRequest, id, key, flush: true as const }
      : { t: MsgType.InvalidateRequest, id, key };
    return link !== undefined && link.conn.send(request) ? owner : undefined;
  }

  /** close(): every pending invalidation rejects with HK_ERR_CLOSED. */
  closeAll(): void {
    this.#pending.closeAll();
  }
}
