/**
 * Hot keys that never stall their readers, on a real hub process with real SDK clients: value push (one loader call per promotion
 * and per refresh period however many instances, an invalidation wins over pushed values) and
 * stale-if-error (a failing loader is answered with the last value for staleIfErrorMs, then fails).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { HotKeyClient } from '@hotkey/sdk';
import { hubProcess } from '../support/e2e.ts';
import { delay, waitFor } from '../support/wait.ts';

const config = {
  apps: {
    shop: {
      rules: [
        { match: 'share:*', threshold: 50, cacheTtlMs: 2000, push: true },
        { match: 'sie:*', threshold: 50, cacheTtlMs: 500, refreshAheadRatio: 1, staleIfErrorMs: 1500 },
      ],
    },
  },
};
const e2e = hubProcess(test, { config });

interface Readers {
  /** the last value each client read */
  last: unknown[];
  errors: unknown[];
  stop(): void;
}

/** Every client reads `key` 10 times every 10 ms through `loader`, until stopped. */
function read(clients: readonly HotKeyClient[], key: string, loader: (key: string) => unknown): Readers {
  const last: unknown[] = clients.map(() => undefined);
  const errors: unknown[] = [];
  const timer = setInterval(() => {
    clients.forEach((hk, i) => {
      for (let n = 0; n < 10; n++)
        hk.get(key, loader).then(
          (v) => (last[i] = v),
          (err: unknown) => errors.push(err),
        );
    });
  }, 10);
  return { last, errors, stop: () => clearInterval(timer) };
}

test('value push: one loader call per promotion and per refresh period for 6 instances; an invalidation wins', async () => {
  // pushWaitMs: readers wait this long for the pushed value before loading themselves (1 s by
  // default); a busy machine can take longer than that from Promote to Value, and this test counts
  // pushes, not that bound. surgeLocal: false — the hub's promotion and its push are under test;
  // the 60 counts below, in one job, would surge the key on each instance first (each its own load)
  const group = await e2e.sdks(6, (i) => ({ instanceId: `push-${i}`, pushWaitMs: 5000, surgeLocal: false }));
  const key = 'share:item:1';
  let version = 1;
  let calls = 0;
  const loader = () => {
    calls++;
    return Promise.resolve({ price: 100, version });
  };
  // cold reads call the loader like any read; count from the promotion on
  for (let i = 0; i < 60; i++) for (const hk of group) hk.track(key);
  await waitFor('the key hot everywhere', () => group.every((hk) => hk.isHot(key)), 5000);
  calls = 0;
  const readers = read(group, key, loader);
  try {
    await waitFor(
      'every instance serves the value',
      () => readers.last.every((v) => (v as { version?: number } | undefined)?.version === 1),
      5000,
    );
    assert.ok(calls <= 2, `at promotion ${calls} loader calls for 6 instances`);
    const injected = group.reduce((n, hk) => n + hk.stats().push.valuesInjected, 0);
    assert.ok(injected >= 5, `the others injected the pushed value (${injected})`);
    // three refresh periods (1.6 s each): one reload each, pushed. The others reload by themselves
    // only when the pushed value is later than 98 % of the TTL (read-path.ts policy): 360 ms here,
    // wide enough for a starved machine
    const before = calls;
    const injectedBefore = group.map((hk) => hk.stats().push.valuesInjected);
    await delay(5000);
    const refreshes = calls - before;
    const injectedSince = group.map((hk, i) => hk.stats().push.valuesInjected - injectedBefore[i]!);
    assert.ok(
      refreshes >= 2 && refreshes <= 4,
      `${refreshes} loader calls over ~3 refresh periods; values injected per instance since: ${injectedSince}`,
    );
    assert.equal(readers.errors, []);
    // a write: the invalidation drops the value everywhere; the next push carries the new one
    version = 2;
    await group[0]!.invalidate(key);
    await waitFor(
      'every instance serves the new value',
      () => readers.last.every((v) => (v as { version?: number } | undefined)?.version === 2),
      5000,
    );
  } finally {
    readers.stop();
  }
  const st = group.map((hk) => hk.stats().push);
  assert.is(
    st.reduce((n, p) => n + p.pushesUnserialisable + p.pushesOversized + p.valuesUndecodable, 0),
    0,
  );
});

test('stale-if-error: a failing loader is answered with the last value for staleIfErrorMs, then the error reaches the caller', async () => {
  const [hk] = await e2e.sdks(1, () => ({ instanceId: 'sie' }));
  const key = 'sie:item:1';
  for (let i = 0; i < 60; i++) hk!.track(key);
  await waitFor('the key hot', () => hk!.isHot(key), 5000);
  assert.is(await hk!.get(key, () => 'v1'), 'v1');
  let failing = 0;
  const down = () => {
    failing++;
    return Promise.reject(new Error('ECONNREFUSED'));
  };
  await delay(600); // past cacheTtlMs (500)
  assert.is(await hk!.get(key, down), 'v1', 'the last value');
  assert.ok(hk!.stats().staleServed >= 1);
  assert.ok(failing >= 1);
  await delay(1500); // past cacheTtlMs + staleIfErrorMs
  const err = await hk!.get(key, down).catch((e: Error) => e);
  assert.instance(err, Error);
  assert.is((err as Error).message, 'ECONNREFUSED');
  assert.is(await hk!.get(key, () => 'v2'), 'v2', 'a working loader heals it');
});

test.run();
