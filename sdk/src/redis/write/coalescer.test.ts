/**
 * The coalescer against a real redis-server: one INCRBY per batch, every caller's reply a point of
 * one serial history, every caller rejected when the merged write fails, early send at maxBatch.
 * Batches are sent by flush() (windows are long here: no test waits on a timer).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Redis } from 'ioredis';
import { Coalescer } from './coalescer.ts';
import { withLiveRedis } from '../live-redis.test-helper.ts';

let r: Redis;
const LONG = 60_000;

withLiveRedis(test, (c) => {
  r = c;
});

async function incrbys(): Promise<number> {
  const info = await r.info('commandstats');
  return Number(/cmdstat_incrby:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

test('a batch is one INCRBY; each caller sees the value right after its own increment', async () => {
  await r.set('c1', 100);
  const landed: string[] = [];
  const c = new Coalescer({
    send: (key, sum) => r.incrby(key, sum),
    onLanded: async (key) => landed.push(key),
  });
  const before = await incrbys();
  const replies = Promise.all([c.add('c1', 1, LONG), c.add('c1', 5, LONG), c.add('c1', 2, LONG)]);
  assert.is(c.pending, 1);
  await c.flush();
  assert.equal(await replies, [101, 106, 108]);
  assert.is((await incrbys()) - before - 1, 0, 'one INCRBY for three increments');
  assert.is(await r.get('c1'), '108');
  assert.equal(landed, ['c1']);
  assert.equal(c.stats, { increments: 3, flushes: 1, failures: 0 });
});

test('a failed merged write rejects every caller of its batch, and only them', async () => {
  await r.set('text', 'not a number');
  const c = new Coalescer({ send: (key, sum) => r.incrby(key, sum) });
  const bad = [c.add('text', 1, LONG), c.add('text', 1, LONG)].map((p) =>
    p.then(
      () => 'ok',
      (e: Error) => e.message,
    ),
  );
  const good = c.add('c2', 1, LONG);
  await c.flush();
  for (const outcome of await Promise.all(bad)) assert.match(outcome, /not an integer/);
  assert.is(await good, 1);
  assert.is(c.stats.failures, 1);
  assert.is(await r.get('text'), 'not a number');
});

test('a batch is sent early at maxBatch; a synchronous throw of send rejects too', async () => {
  const c = new Coalescer({ send: (key, sum) => r.incrby(key, sum), maxBatch: 3 });
  const first = [1, 2, 3].map(() => c.add('c3', 1, LONG));
  assert.is(c.pending, 0, 'sent at the third increment');
  assert.equal(await Promise.all(first), [1, 2, 3]);
  const throwing = new Coalescer({
    send: () => {
      throw new Error('boom');
    },
  });
  const p = throwing.add('k', 1, LONG).catch((e: Error) => e.message);
  await throwing.flush();
  assert.is(await p, 'boom');
});

test.run();
