/**
 * docs/guides/cacheable.md: its example, docs/guides/examples/cacheable.ts (cacheable with one
 * store, @keyv/redis over a node-redis client that hotkey wraps), on a real redis-server and hub,
 * held to both promises; then what cacheable's own in-memory primary does to them, measured the
 * same way on two instances: its default layout (a CacheableMemory primary before the
 * @keyv/redis secondary), without and with its Redis sync (`sync` over @qified/redis). Its memory
 * layer answers the hot key without Redis as well; its caveat, asserted: B's next read after a
 * write acknowledged on A returns the old value.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RedisMessageProvider } from '@qified/redis';
import KeyvRedis from '@keyv/redis';
import { Cacheable } from 'cacheable';
import { openItems, type Item } from '../../docs/guides/examples/cacheable.ts';
import { clientGuide, ROUNDS } from './client-guide.ts';
import { guideFixture } from './fixture.ts';
import { commandsDuring, msUntilSeen, staleAfterWrites, untilServedLocally } from './guarantees.ts';

const fx = guideFixture(test);
const value = (i: number): Item => ({ id: 'flash', price: 100 + i });

clientGuide(test, fx, 'cacheable + hotkey', () => openItems(fx.redisUrl, fx.hubUrl), value);

/** cacheable as its README lays it out: the in-memory primary (its default) before a Redis secondary. */
function ownMemoryLayer(sync: boolean) {
  const cache = new Cacheable({
    secondary: new KeyvRedis(fx.redisUrl),
    ...(sync ? { sync: { qified: new RedisMessageProvider({ uri: fx.redisUrl }) } } : {}),
  });
  fx.defer(() => cache.disconnect());
  return {
    get: (id: string) => cache.get<Item>(`own:${id}`),
    set: (id: string, item: Item) => cache.set(`own:${id}`, item, '1m'),
  };
}

for (const sync of [false, true])
  test(`cacheable's own memory layer${sync ? ' with its Redis sync' : ''}: local, but B reads the old value after A's write`, async () => {
    const [a, b] = [ownMemoryLayer(sync), ownMemoryLayer(sync)];
    await a.set('flash', value(0));
    await untilServedLocally([a, b], 'flash', fx.commands);
    const steady = await commandsDuring([a, b], 'flash', value(0), fx.commands);
    const s = await staleAfterWrites(a, b, 'flash', value, ROUNDS, fx.commands);
    console.log(
      `  cacheable memory layer${sync ? ' + sync' : ''}: ${steady} Redis commands in 400 reads; ${s.stale} stale of ${s.rounds} on B after writes on A`,
    );
    assert.is(steady, 0, 'its memory layer answers the hot key without Redis too');
    assert.is(s.staleOwn, 0, 'A reads its own writes');
    const seenMs = await msUntilSeen(a, b, 'flash', value(ROUNDS + 1), 2000);
    console.log(
      `  … then B read a write on A ${seenMs === undefined ? 'not within 2 s' : `after ${seenMs.toFixed(0)} ms`}`,
    );
    if (sync) {
      assert.ok(s.stale > 0, 'its sync arrives after the write resolved, at least once');
      assert.ok(seenMs !== undefined, 'with its sync, B reads the write within 2 s');
    } else {
      assert.is(s.stale, ROUNDS, 'without a sync, B never hears of A’s writes');
      assert.is(seenMs, undefined, 'without a sync, B still reads the old value 2 s later');
    }
  });

test.run();
