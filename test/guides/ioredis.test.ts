/**
 * docs/guides/ioredis.md: its example, docs/guides/examples/ioredis.ts, on a real redis-server and
 * hub; and the counter the guide tests rely on, shown failing where it must: two plain ioredis
 * clients (no hotkey) reading the same key send Redis every read.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { openPrices } from '../../docs/guides/examples/ioredis.ts';
import { clientGuide } from './client-guide.ts';
import { guideFixture } from './fixture.ts';
import { commandsDuring } from './guarantees.ts';

const fx = guideFixture(test);
clientGuide(
  test,
  fx,
  'ioredis',
  () => openPrices(fx.redisUrl, fx.hubUrl),
  (i) => `${100 + i}.00`,
);

test('without hotkey, the same reads all reach Redis (the counter sees them)', async () => {
  const [a, b] = [new Redis(fx.redisUrl), new Redis(fx.redisUrl)];
  fx.defer(() => (a.disconnect(), b.disconnect()));
  await a.set('plain:flash', '1.00');
  const plain = (r: Redis) => ({
    get: (id: string) => r.get(`plain:${id}`),
    set: (id: string, v: string) => r.set(`plain:${id}`, v),
  });
  assert.is(await commandsDuring([plain(a), plain(b)], 'flash', '1.00', fx.commands), 400);
});

test.run();
