/**
 * Connection state changes, as `status()` yields them: a fan-out to any number of queued async
 * iterators, after nats.js's QueuedIteratorImpl. Each reader has its own bounded queue; a reader
 * that lags loses its oldest items rather than holding memory without bound.
 */
import type { Member } from '../../wire/protocol.ts';

/** Connection state changes, as yielded by `status()`. */
export type ClientStatus =
  | { type: 'connect'; hub: string; url: string }
  | { type: 'disconnect'; hub: string | undefined; url: string; code: number; reason: string }
  | { type: 'reconnecting'; url: string; delayMs: number }
  | { type: 'members'; epoch: number; members: Member[] }
  | { type: 'resync'; hub: string; reason: 'gap' }
  | { type: 'stale'; hub: string; keys: number }
  | { type: 'error'; error: Error; url?: string }
  /** a hot key's reload failed and its last value is served (stale-if-error); once per key until it reloads */
  | { type: 'stale-value'; key: string; error: Error }
  | { type: 'closed' };

/** items a reader that does not keep up may fall behind before it loses the oldest */
export const STATUS_QUEUE_LIMIT = 1024;

/** One reader's queue: `push` from the producer, `next` from a `for await`. */
export class QueuedIterator<T> implements AsyncIterableIterator<T> {
  readonly #queue: T[] = [];
  readonly #limit: number;
  readonly #onReturn: (it: QueuedIterator<T>) => void;
  #ended = false;
  #wake: (() => void) | undefined;

  constructor(limit: number, onReturn: (it: QueuedIterator<T>) => void) {
    this.#limit = limit;
    this.#onReturn = onReturn;
  }

  push(item: T): void {
    if (this.#queue.length >= this.#limit) this.#queue.shift(); // a reader that lags loses the oldest
    this.#queue.push(item);
    this.#wake?.();
  }

  /** No more items: the reader sees what is queued, then the end. */
  end(): void {
    this.#ended = true;
    this.#wake?.();
  }

  async next(): Promise<IteratorResult<T, undefined>> {
    for (;;) {
      const item = this.#queue.shift();
      if (item !== undefined) return { value: item, done: false };
      if (this.#ended) return { value: undefined, done: true };
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }

  async return(): Promise<IteratorResult<T, undefined>> {
    this.#onReturn(this);
    this.#ended = true;
    this.#queue.length = 0;
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/** Every reader of one producer's items; after `end()` new readers end at once. */
export class StatusFeed<T> {
  readonly #readers = new Set<QueuedIterator<T>>();
  readonly #limit: number;
  #ended = false;

  constructor(limit = STATUS_QUEUE_LIMIT) {
    this.#limit = limit;
  }

  push(item: T): void {
    for (const reader of this.#readers) reader.push(item);
  }

  iterate(): AsyncIterableIterator<T> {
    const reader = new QueuedIterator<T>(this.#limit, (r) => this.#readers.delete(r));
    if (this.#ended) reader.end();
    else this.#readers.add(reader);
    return reader;
  }

  end(): void {
    this.#ended = true;
    for (const reader of this.#readers) reader.end();
    this.#readers.clear();
  }
}
