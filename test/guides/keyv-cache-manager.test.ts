/**
 * docs/guides/keyv-cache-manager.md: its example, docs/guides/examples/keyv-cache-manager.ts
 * (cache-manager v7 → Keyv → @keyv/redis → a node-redis client wrapped by hotkey), on a real
 * redis-server and hub: a hot item read through cache-manager sends Redis no command, and a write
 * acknowledged on one instance is the other's next read. Then the two-tier layout the page warns
 * against (an in-memory Keyv before the Redis one, no hotkey), measured the same way, its caveats
 * asserted: a key is in memory only on an instance that wrote it (cache-manager's `get` does not
 * fill the tiers before the one that answered), and there it never hears of other instances' writes.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import KeyvRedis from '@keyv/redis';
import { createCache } from 'cache-manager';
import { CacheableMemory, Keyv } from 'cacheable';
import { openItems, type Item } from '../../docs/guides/examples/keyv-cache-manager.ts';
import { clientGuide, ROUNDS } from './client-guide.ts';
import { guideFixture } from './fixture.ts';
import { commandsDuring, msUntilSeen, staleAfterWrites } from './guarantees.ts';

const fx = guideFixture(test);
const value = (i: number): Item => ({ id: 'flash', price: 100 + i });

clientGuide(test, fx, 'keyv-cache-manager', () => openItems(fx.redisUrl, fx.hubUrl), value);

function twoTiers() {
  const cache = createCache({
    stores: [
      new Keyv({ store: new CacheableMemory({ ttl: 60_000 }) }),
      new Keyv({ store: new KeyvRedis(fx.redisUrl) }),
    ],
  });
  fx.defer(() => cache.disconnect());
  return {
    get: (id: string) => cache.get<Item>(`tiers:${id}`),
    set: (id: string, item: Item) => cache.set(`tiers:${id}`, item, 60_000),
  };
}

test('an in-memory Keyv before the Redis one: memory only where the key was written, and B misses A’s writes', async () => {
  const [a, b] = [twoTiers(), twoTiers()];
  await a.set('flash', value(0));
  const onA = await commandsDuring([a], 'flash', value(0), fx.commands);
  const onB = await commandsDuring([b], 'flash', value(0), fx.commands);
  // B's memory tier holds the key once B itself wrote it: from then on it never hears of A's writes
  await b.set('flash', value(0));
  const s = await staleAfterWrites(a, b, 'flash', value, ROUNDS, fx.commands);
  const seenMs = await msUntilSeen(a, b, 'flash', value(ROUNDS + 1), 2000);
  console.log(
    `  cache-manager memory + Redis tiers: Redis commands in 200 reads: ${onA} on the writer, ${onB} on another instance; ${s.stale} stale of ${s.rounds} once B had written the key`,
  );
  assert.is(onA, 0, 'the writer answers from its memory tier');
  assert.is(onB, 200, 'another instance reads Redis every time: a hit in Redis does not fill its memory tier');
  assert.is(s.staleOwn, 0, 'A reads its own writes');
  assert.is(s.stale, ROUNDS, 'B keeps the copy it wrote after every write on A');
  assert.is(seenMs, undefined, 'B still reads the old value 2 s later');
});

test.run();
