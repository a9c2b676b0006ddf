import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { StatusFeed } from './status.ts';

test('every reader gets every item, in order, then the end', async () => {
  const feed = new StatusFeed<number>();
  const a = feed.iterate();
  const b = feed.iterate();
  feed.push(1);
  feed.push(2);
  feed.end();
  const seen: number[] = [];
  for await (const n of a) seen.push(n);
  assert.equal(seen, [1, 2]);
  assert.equal(await b.next(), { value: 1, done: false });
});

test('a waiting reader wakes on push', async () => {
  const feed = new StatusFeed<string>();
  const it = feed.iterate();
  const next = it.next();
  feed.push('x');
  assert.equal(await next, { value: 'x', done: false });
});

test('a reader that lags loses the oldest items past the limit', async () => {
  const feed = new StatusFeed<number>(3);
  const it = feed.iterate();
  for (let i = 1; i <= 5; i++) feed.push(i);
  feed.end();
  const seen: number[] = [];
  for await (const n of it) seen.push(n);
  assert.equal(seen, [3, 4, 5]);
});

test('return() unsubscribes; a reader made after end() ends at once', async () => {
  const feed = new StatusFeed<number>();
  const it = feed.iterate();
  await it.return?.();
  feed.push(1);
  assert.equal(await it.next(), { value: undefined, done: true });
  feed.end();
  assert.equal(await feed.iterate().next(), { value: undefined, done: true });
});

test.run();
