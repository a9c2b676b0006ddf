/**
 * Held reads: the cold GETs a client issues in one synchronous job (a `Promise.all`, a
 * dataloader's batch, a request fanning out) are counted before any is sent, so that a key
 * surging in that job is loaded once, tracked, instead of once per read until the count crosses.
 *
 * How: a cold GET is held until the end of the current job (a microtask), then the held GETs are
 * sent in call order. Any other command of the same connection that reaches the adapter's hook
 * first sends what is held, synchronously, before itself: the order of commands on the connection
 * is exactly a plain client's. At the flush the held GETs of one key (same client, same reply
 * shape) are one read: the key's tracked hot load if the key surged meanwhile, else one plain GET
 * whose reply answers them all. A GET of a hot key whose value hk will not cache (no current
 * lease: a hub outage) is held the same way, marked `plain`: it is a cold read as far as Redis is
 * concerned, and the reads of one job share its one GET.
 *
 * Why answering several GETs with one reply is safe: each of them was issued before that one GET
 * was sent, and each is answered only after its reply, so the moment Redis executed it lies
 * within every one of their calls — a linearizable answer to concurrent reads, as if Redis had
 * run them back to back with nothing between (a write issued between two of them on this client
 * sends the first before the write, so the second is a new read). Batching per job is what
 * dataloader does with the loads of one tick ("a single frame of execution"), and what ioredis's
 * `enableAutoPipelining` does with the commands of one event-loop iteration; neither changes what
 * a caller can observe, and neither does this. Bounded: MAX_HELD reads per connection, past which
 * the held ones are sent at once.
 */
import type { RedisCommand, Send } from '../command.ts';

/** reads held per connection at most; the next one sends them first */
export const MAX_HELD = 1024;
/** a flush of at most this many reads finds a key's first read by comparing keys, with no Map (garbage per job) */
const SCAN_MAX = 16;

interface Held<C> {
  client: C;
  send: Send<C>;
  command: RedisCommand;
  key: string;
  plain: boolean;
  /** the breaker's node of a cold read (hot-read.ts `ReadGuard`) */
  node: object | undefined;
  /** at the flush: the reads answered by this one's reply */
  sharing: Held<C>[] | undefined;
  /** at the flush: the key's next group (another client or other options) */
  nextGroup: Held<C> | undefined;
  /** at the flush: answered by another read's reply (on its `sharing`), not sent itself */
  shares: boolean;
}

/** Sends one held read of `key` now (a group's first; the rest get its reply); returns its reply. */
export type SendHeld<C> = (
  client: C,
  send: Send<C>,
  command: RedisCommand,
  key: string,
  plain: boolean,
  node: object | undefined,
) => unknown;

export class HeldReads<C extends object> {
  readonly #held = new Map<object, Held<C>[]>();
  /** a microtask is queued that sends every list held when it runs (one per job, for every connection) */
  #due = false;
  /** the end of the job: sends what is held (one function for every job, no closure per list) */
  readonly #atJobEnd = (): void => {
    this.#due = false;
    // the lists held now, in the order they began; one a send holds meanwhile waits for its own job's end
    let lists = this.#held.size;
    for (const [conn, list] of this.#held) {
      if (lists-- === 0) break;
      this.#flushList(conn, list);
    }
  };

  readonly #connection: (client: C) => object;
  readonly #sendOne: SendHeld<C>;
  readonly #same: (a: RedisCommand, b: RedisCommand) => boolean;
  readonly #shared: ((client: C, command: RedisCommand, node: object | undefined) => void) | undefined;
  readonly #batch: ((client: C, run: () => void) => void) | undefined;

  /**
   * @param connection the object whose commands share one order (a client under its proxies)
   * @param sendOne sends one read of a key now (through the cache when hot, else plain)
   * @param same whether two reads of one key may share one reply (same options, same encoding)
   * @param shared told of each read answered by another's reply, as that one is sent
   * @param batch runs a flush of several reads so that they leave in one write (the adapter's cork)
   */
  constructor(
    connection: (client: C) => object,
    sendOne: SendHeld<C>,
    same: (a: RedisCommand, b: RedisCommand) => boolean,
    shared?: (client: C, command: RedisCommand, node: object | undefined) => void,
    batch?: (client: C, run: () => void) => void,
  ) {
    this.#shared = shared;
    this.#batch = batch;
    this.#connection = connection;
    this.#sendOne = sendOne;
    this.#same = same;
  }

  /**
   * Holds `command` (a GET of `key`) until the end of the job; returns its promise. `plain`: a
   * read of a hot key whose value is not cached, sent as is (`sendOne` is told); `node`, handed
   * back to `sendOne`.
   */
  hold(client: C, send: Send<C>, command: RedisCommand, key: string, plain = false, node?: object): Promise<unknown> {
    const conn = this.#connection(client);
    let list = this.#held.get(conn);
    if (list !== undefined && list.length >= MAX_HELD) {
      this.flush(client);
      list = undefined;
    }
    if (list === undefined) {
      list = [];
      this.#held.set(conn, list);
      if (!this.#due) {
        this.#due = true;
        queueMicrotask(this.#atJobEnd);
      }
    }
    list.push({ client, send, command, key, plain, node, sharing: undefined, nextGroup: undefined, shares: false });
    return command.promise;
  }

  /** Whether reads are held for `client`'s connection now. */
  holding(client: C): boolean {
    return this.#held.size !== 0 && this.#held.has(this.#connection(client));
  }

  /** Sends what is held for `client`'s connection, in call order (before another command of it). */
  flush(client: C): void {
    if (this.#held.size === 0) return;
    const conn = this.#connection(client);
    const list = this.#held.get(conn);
    if (list !== undefined) this.#flushList(conn, list);
  }

  #flushList(conn: object, list: Held<C>[]): void {
    this.#held.delete(conn);
    if (list.length === 1) {
      const { client, send, command, key, plain, node } = list[0]!;
      this.#sendOne(client, send, command, key, plain, node);
      return;
    }
    if (this.#batch === undefined) this.#sendList(list);
    else this.#batch(list[0]!.client, () => this.#sendList(list));
  }

  #sendList(list: Held<C>[]): void {
    // groups of one key in order of their first read; a read that may not share a reply is its
    // own group. A group is its first read, the others on its `sharing`; a key's groups after its
    // first are chained on `nextGroup` (one Map entry per key, none for a short list, no array per read)
    const byKey = list.length > SCAN_MAX ? new Map<string, Held<C>>() : undefined;
    for (let i = 0; i < list.length; i++) {
      const held = list[i]!;
      const head = byKey === undefined ? firstOf(list, i, held.key) : byKey.get(held.key);
      let group = head;
      while (group !== undefined && !(group.client === held.client && this.#same(group.command, held.command)))
        group = group.nextGroup;
      if (group !== undefined) {
        held.shares = true;
        (group.sharing ??= []).push(held);
        continue;
      }
      if (head === undefined) byKey?.set(held.key, held);
      else {
        held.nextGroup = head.nextGroup;
        head.nextGroup = held;
      }
    }
    for (const first of list) {
      if (first.shares) continue;
      const reply = this.#sendOne(first.client, first.send, first.command, first.key, first.plain, first.node);
      const sharing = first.sharing;
      if (sharing === undefined) continue;
      if (this.#shared !== undefined) for (const held of sharing) this.#shared(held.client, held.command, held.node);
      Promise.resolve(reply).then(
        (value) => {
          for (const held of sharing) held.command.resolve(value);
        },
        (error: Error) => {
          for (const held of sharing) held.command.reject(error);
        },
      );
    }
  }
}

/** The first group of `key` among `list`'s reads before `end` (the first read of it not sharing another's reply). */
function firstOf<C>(list: readonly Held<C>[], end: number, key: string): Held<C> | undefined {
  for (let i = 0; i < end; i++) {
    const held = list[i]!;
    if (held.key === key && !held.shares) return held;
  }
  return undefined;
}
