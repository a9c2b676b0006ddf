/** docs/guides/iovalkey.md: its example, docs/guides/examples/iovalkey.ts, on a real redis-server and hub. */
import { test } from 'uvu';
import { openPrices } from '../../docs/guides/examples/iovalkey.ts';
import { clientGuide } from './client-guide.ts';
import { guideFixture } from './fixture.ts';

const fx = guideFixture(test);
clientGuide(
  test,
  fx,
  'iovalkey',
  () => openPrices(fx.redisUrl, fx.hubUrl),
  (i) => `${100 + i}.00`,
);

test.run();
