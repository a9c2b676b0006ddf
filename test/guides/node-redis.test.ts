/** docs/guides/node-redis.md: its example, docs/guides/examples/node-redis.ts, on a real redis-server and hub. */
import { test } from 'uvu';
import { openPrices } from '../../docs/guides/examples/node-redis.ts';
import { clientGuide } from './client-guide.ts';
import { guideFixture } from './fixture.ts';

const fx = guideFixture(test);
clientGuide(
  test,
  fx,
  'node-redis',
  () => openPrices(fx.redisUrl, fx.hubUrl),
  (i) => `${100 + i}.00`,
);

test.run();
