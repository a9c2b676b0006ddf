/**
 * The hub sizes a read-hot uncached key's replica count from its cluster QPS and promotes it again
 * when the QPS crosses a step (up at once, down past a margin); a cached key never gets copies.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { HotKeyClient } from '@hotkey/sdk';
import { adapterView } from '@hotkey/sdk/internal';
import { hubInProcess } from '../support/e2e.ts';
import { waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: {
        rules: [
          {
            match: 'feed:*',
            threshold: 20,
            hotMs: 600_000,
            cache: false,
            replicas: { perNodeQps: 100, factor: 1, max: 4 },
          },
          { match: 'page:*', threshold: 20, hotMs: 600_000 },
        ],
      },
    },
  },
});

/** Tracks `key` on `hk` at about `perSecond` until stopped. */
function load(hk: HotKeyClient, key: string): { rate: number; stop: () => void } {
  const state = { rate: 0, stop: () => clearInterval(timer) };
  let owed = 0;
  const timer = setInterval(() => {
    owed += state.rate / 50;
    for (; owed >= 1; owed--) hk.track(key);
  }, 20);
  return state;
}

test('the replica count follows the QPS in steps; cached keys have none', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 50 }));
  const feed = load(hk!, 'feed:1');
  const page = load(hk!, 'page:1');
  try {
    feed.rate = 60;
    page.rate = 400;
    await waitFor('feed:1 hot with one copy', () => adapterView(hk!).replicasOf('feed:1') === 1, 10_000);
    await waitFor('page:1 hot', () => adapterView(hk!).replicasOf('page:1') >= 1, 10_000);
    feed.rate = 350; // ceil(350 / 100) = 4 copies
    await waitFor('feed:1 stepped up to 4 copies', () => adapterView(hk!).replicasOf('feed:1') === 4, 10_000);
    feed.rate = 120; // 120 × 1.25 = 150: 2 copies
    await waitFor('feed:1 stepped down', () => adapterView(hk!).replicasOf('feed:1') <= 2, 10_000);
    assert.is(adapterView(hk!).replicasOf('page:1'), 1, 'a cached key is never replicated');
  } finally {
    feed.stop();
    page.stop();
  }
});

test.run();
