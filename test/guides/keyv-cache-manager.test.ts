/**
 * docs/guides/keyv-cache-manager.md: its example, docs/guides/examples/keyv-cache-manager.ts
 * (cache-manager v7 → Keyv → @keyv/redis → a node-redis client wrapped by hotkey), on a real
 * redis-server and hub: a hot item read through cache-manager sends Redis no command, and a write
 * acknowledged on one instance is the other's next read.
 */
import { test } from 'uvu';
import { openItems } from '../../docs/guides/examples/keyv-cache-manager.ts';
import { clientGuide } from './client-guide.ts';
import { guideFixture } from './fixture.ts';

const fx = guideFixture(test);
clientGuide(
  test,
  fx,
  'keyv-cache-manager',
  () => openItems(fx.redisUrl, fx.hubUrl),
  (i) => ({ id: 'flash', price: 100 + i }),
);

test.run();
