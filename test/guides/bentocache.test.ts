/**
 * docs/guides/bentocache.md: its example, docs/guides/examples/bentocache.ts (an L2-only bentostore
 * over an ioredis connection that hotkey wraps), on a real redis-server and hub, held to both
 * promises; then what bentocache's own L1 and bus do to them, measured the same way on two
 * instances (memory L1 + Redis L2 + Redis pub/sub bus): its L1 answers the hot key without Redis as
 * well, and B reads a write within 2 s; its caveat, asserted: a write resolves without waiting for
 * the other instances, so B's next read after it is served by B's L1, old.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BentoCache, bentostore } from 'bentocache';
import { memoryDriver } from 'bentocache/drivers/memory';
import { redisBusDriver, redisDriver } from 'bentocache/drivers/redis';
import { openItems, type Item } from '../../docs/guides/examples/bentocache.ts';
import { clientGuide, ROUNDS } from './client-guide.ts';
import { guideFixture } from './fixture.ts';
import { commandsDuring, msUntilSeen, staleAfterWrites, untilServedLocally } from './guarantees.ts';

const fx = guideFixture(test);
const value = (i: number): Item => ({ id: 'flash', price: 100 + i });

clientGuide(test, fx, 'bentocache + hotkey', () => openItems(fx.redisUrl, fx.hubUrl), value);

const at = (url: string) => ({ host: '127.0.0.1', port: Number(new URL(url).port) });

/** bentocache as its docs lay out a multi-instance cache: memory L1, Redis L2, Redis bus. */
function ownL1AndBus() {
  const bento = new BentoCache({
    default: 'items',
    stores: {
      items: bentostore()
        .useL1Layer(memoryDriver({ maxItems: 1000 }))
        .useL2Layer(redisDriver({ connection: at(fx.redisUrl) }))
        .useBus(redisBusDriver({ connection: at(fx.redisUrl) })),
    },
  });
  fx.defer(() => bento.disconnectAll());
  return {
    get: (id: string) => bento.get<Item>({ key: `own:${id}` }),
    set: (id: string, item: Item) => bento.set({ key: `own:${id}`, value: item, ttl: '1m' }),
  };
}

test("bentocache's own L1 and bus: local and eventually consistent, but B reads the old value after A's write", async () => {
  const [a, b] = [ownL1AndBus(), ownL1AndBus()];
  await a.set('flash', value(0));
  await untilServedLocally([a, b], 'flash', fx.commands);
  const steady = await commandsDuring([a, b], 'flash', value(0), fx.commands);
  const calm = await staleAfterWrites(a, b, 'flash', value, ROUNDS, fx.commands);
  const calmSeenMs = await msUntilSeen(a, b, 'flash', value(ROUNDS + 1), 2000);
  console.log(
    `  bentocache L1 + bus: ${steady} Redis commands in 400 reads; ${calm.stale} stale of ${calm.rounds} on B after writes on A; then seen after ${calmSeenMs?.toFixed(0)} ms`,
  );
  assert.is(steady, 0, 'its L1 answers the hot key without Redis too');
  assert.is(calm.staleOwn, 0, 'A reads its own writes');
  assert.ok(calmSeenMs !== undefined, 'with the bus up, B reads a write within 2 s');

  assert.is(calm.stale, ROUNDS, 'the bus does not wait for B: its L1 still answers the old value');
});

test.run();
