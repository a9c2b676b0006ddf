/**
 * Multi-key reads while a rule has a per-key `limit` (sdk/src/ioredis/multi-read.ts): the GET
 * fast path is off then, so hot keys of an MGET are read through the wrapper's Command path —
 * still answered locally — and an MGET whose first key is over its share is rejected with
 * HK_ERR_RATE_LIMITED without being sent, as any command is. Its own hub, so that the limit does
 * not change what the other multi-read tests exercise.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { ErrorCode } from '@hotkey/sdk';
import { hubInProcess } from '../support/e2e.ts';
import { RedisServer } from '../support/redis-server.ts';
import { promoteOn, wrappedReaders } from '../support/staleness.ts';
import { delay, waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: {
        rules: [
          { match: 'rl:*', threshold: 1_000_000, limit: 200, hotMs: 600_000, cacheTtlMs: 600_000 },
          { match: '*', threshold: 1_000_000, hotMs: 600_000, cacheTtlMs: 600_000 },
        ],
      },
    },
  },
});
let server: RedisServer;
const opened: Redis[] = [];

test.before(async () => {
  server = await RedisServer.start();
});
test.after(async () => {
  for (const c of opened) c.disconnect();
  await delay(20);
  await server?.stop();
});

test('limits on: hot keys of an MGET answered locally; an MGET over its first key’s share is refused unsent', async () => {
  const plain = new Redis(server.url);
  opened.push(plain);
  const [r] = await wrappedReaders(e2e, 1, () => {
    const c = new Redis(server.url, { maxRetriesPerRequest: 1 });
    opened.push(c);
    return c;
  });
  await waitFor('limits known', () => r!.hk.limiting, 3000);
  await plain.mset({ 'k:1': 'one', 'k:2': 'two', 'rl:a': 'A' });
  for (const key of ['k:1', 'k:2', 'rl:a']) await promoteOn(e2e, key, [r!]);
  const calls = async (name: string) =>
    Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(await plain.info('commandstats'))?.[1] ?? 0);
  // cached, under a live tracking session: an MGET of them sends no GET
  await waitFor(
    'k:1 and k:2 served locally',
    async () => {
      const gets = await calls('get');
      assert.equal(await r!.redis.mget('k:1', 'k:2'), ['one', 'two']);
      return (await calls('get')) === gets;
    },
    3000,
    5,
  );
  const mgets = () => calls('mget');
  const [before, getsBefore] = [await mgets(), await calls('get')];
  for (let i = 0; i < 20; i++) assert.equal(await r!.redis.mget('k:2', 'k:1', 'k:none'), ['two', 'one', null]);
  assert.is((await mgets()) - before, 20, 'one MGET of the miss per call');
  assert.is((await calls('get')) - getsBefore, 0, 'nothing for the hot keys');
  // far more calls at once than the key's bucket holds (0.1 s of its share)
  const sentBefore = await mgets();
  const outcomes = await Promise.allSettled(Array.from({ length: 300 }, () => r!.redis.mget('rl:a', 'k:1')));
  const refused = outcomes.filter(
    (o) => o.status === 'rejected' && (o.reason as { code?: string }).code === ErrorCode.RateLimited,
  );
  const answered = outcomes.filter((o) => o.status === 'fulfilled');
  assert.ok(refused.length > 0, 'some were refused');
  assert.is(refused.length + answered.length, 300, 'refused or answered, nothing else');
  for (const o of answered) assert.equal((o as PromiseFulfilledResult<unknown>).value, ['A', 'one']);
  assert.is((await mgets()) - sentBefore, 0, 'refused ones were not sent, admitted ones were local');
});

test.run();
