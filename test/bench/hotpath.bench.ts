/**
 * Benchmark 4 — SDK hot path, ns/op: `get()` answered from the local cache on a hot key,
 * `track()` on a cold key (one that has a counter, and a flood of distinct keys that mostly do
 * not), beside a bare `Map.get` in the same loop shape. The key is made hot the real way: a hub
 * in its own process promotes it after the client reported it. The naive client (Map counts,
 * Map of values) is measured the same way against the naive hub.
 */
import { HotKeyClient } from '@hotkey/sdk';
import { NaiveClient } from './baseline/naive-client.ts';
import { benchMain, measureNsPerOp, measureNsPerOpAsync, type BenchRow, type NsPerOpOptions } from './harness.ts';
import { startServer } from './server-process.ts';
import { waitFor } from '../support/wait.ts';

const HOT = 'item:hot';
const COLD = 'item:cold';

function distinctKeys(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `user:${i}:profile`);
}

benchMain(async ({ quick }) => {
  const opts: NsPerOpOptions = quick
    ? { warmupMs: 100, rounds: 3, roundMs: 30 }
    : { warmupMs: 500, rounds: 9, roundMs: 150 };
  const flood = distinctKeys(1 << 20);
  const mask = flood.length - 1;
  const value = { price: 42 };

  // bare Map.get, the floor every figure is read against
  const map = new Map<string, unknown>([[HOT, value]]);
  for (let i = 0; i < 10_000; i++) map.set(`filler:${i}`, i);
  const bare = measureNsPerOp((n) => {
    let x = 0;
    for (let i = 0; i < n; i++) if (map.get(HOT) !== undefined) x++;
    return x;
  }, opts);
  // the same, awaited one per task: a Map of ready promises, as get() hands back
  const held = new Map<string, Promise<unknown>>([[HOT, Promise.resolve(value)]]);
  const bareAwaited = await measureNsPerOpAsync(async (n) => {
    let x = 0;
    for (let i = 0; i < n; i++) if ((await held.get(HOT)) !== undefined) x++;
    return x;
  }, opts);

  // ours
  // Each measurement holds the event loop for seconds (the sync one in one task, the awaited one in
  // microtasks), so no lease renewal, promotion or expiry is processed meanwhile: a lease, hot time
  // and cache TTL of 10 minutes keep every measured get() a hit (checked below), as renewals would.
  const hub = await startServer('hub', {
    threshold: 50,
    tunables: { leaseMs: 600_000 },
    rule: { hotMs: 600_000, cacheTtlMs: 600_000 },
  });
  // a surge level no key reaches: the cold key's track() runs the whole local-surge check on every
  // call (as a key below the level does) and stays cold
  const client = new HotKeyClient({
    app: 'bench',
    hubs: hub.url,
    instanceId: 'hotpath',
    surgeLocal: { minAccesses: 2 ** 31 },
  });
  let ours: { get: number; getAwaited: number; trackCold: number; trackFlood: number };
  try {
    await client.ready({ signal: AbortSignal.timeout(10_000) });
    for (let i = 0; i < 200; i++) client.track(HOT);
    await waitFor('hub promotes the hot key', () => client.isHot(HOT), 5000);
    await client.get(HOT, () => value); // load once: later gets hit the cache
    if (client.stats().loads !== 1) throw new Error(`expected one load, got ${client.stats().loads}`);
    const hitsBefore = client.stats().hits;
    const get = measureNsPerOp((n) => {
      let last: Promise<unknown> | undefined;
      for (let i = 0; i < n; i++) last = client.get(HOT, () => value);
      return last;
    }, opts);
    if (client.stats().hits - hitsBefore < get.iterations * get.rounds.length)
      throw new Error('get() did not hit the cache');
    const awaitedBefore = client.stats().hits;
    const getAwaited = await measureNsPerOpAsync(async (n) => {
      let last: unknown;
      for (let i = 0; i < n; i++) last = await client.get(HOT, () => value);
      return last;
    }, opts);
    if (client.stats().hits - awaitedBefore < getAwaited.iterations * getAwaited.rounds.length)
      throw new Error('awaited get() did not hit the cache');
    for (let i = 0; i < 10; i++) client.track(COLD);
    const trackCold = measureNsPerOp((n) => {
      for (let i = 0; i < n; i++) client.track(COLD);
    }, opts);
    if (client.isHot(COLD)) throw new Error('the cold key became hot during the benchmark');
    let j = 0;
    const trackFlood = measureNsPerOp((n) => {
      for (let i = 0; i < n; i++) client.track(flood[j++ & mask]!);
    }, opts);
    ours = {
      get: get.median,
      getAwaited: getAwaited.median,
      trackCold: trackCold.median,
      trackFlood: trackFlood.median,
    };
  } finally {
    await client.close();
    await hub.stop();
  }

  // naive
  const naiveHub = await startServer('naive', { threshold: 50 });
  const naive = await NaiveClient.connect({ url: naiveHub.url, app: 'bench' });
  let base: { get: number; getAwaited: number; trackCold: number; trackFlood: number };
  try {
    for (let i = 0; i < 200; i++) naive.track(HOT);
    await waitFor('naive hub promotes the hot key', () => naive.isHot(HOT), 5000);
    naive.get(HOT, () => value);
    const get = measureNsPerOp((n) => {
      let last: unknown;
      for (let i = 0; i < n; i++) last = naive.get(HOT, () => value);
      return last;
    }, opts);
    const getAwaited = await measureNsPerOpAsync(async (n) => {
      let last: unknown;
      for (let i = 0; i < n; i++) last = await naive.get(HOT, () => value);
      return last;
    }, opts);
    const trackCold = measureNsPerOp((n) => {
      for (let i = 0; i < n; i++) naive.track(COLD);
    }, opts);
    let j = 0;
    // the naive client's counting map grows with every distinct key until its next flush:
    // flush each round so this measures counting, not a million-entry Map's rehashing alone
    const trackFlood = measureNsPerOp((n) => {
      for (let i = 0; i < n; i++) naive.track(flood[j++ & mask]!);
      naive.flush();
    }, opts);
    base = {
      get: get.median,
      getAwaited: getAwaited.median,
      trackCold: trackCold.median,
      trackFlood: trackFlood.median,
    };
  } finally {
    await naive.close();
    await naiveHub.stop();
  }

  const rows: BenchRow[] = [
    {
      bench: '4 hot path',
      metric: 'get() hit on a hot key',
      ours: ours.get,
      baseline: base.get,
      unit: 'ns/op',
      better: 'lower',
      target: { reach: 150, aim: 100 },
    },
    {
      bench: '4 hot path',
      metric: 'get() hit ÷ bare Map.get',
      ours: ours.get / bare.median,
      unit: '×',
      better: 'lower',
      target: { aim: 3 },
      note: `bare Map.get ${bare.median.toFixed(1)} ns/op`,
    },
    {
      bench: '4 hot path',
      metric: 'get() hit, awaited one per task',
      ours: ours.getAwaited,
      baseline: base.getAwaited,
      unit: 'ns/op',
      better: 'lower',
      note: `the way services call it; an awaited Map of ready promises: ${bareAwaited.median.toFixed(1)} ns/op`,
    },
    {
      bench: '4 hot path',
      metric: 'track() on a cold key (has a counter)',
      ours: ours.trackCold,
      baseline: base.trackCold,
      unit: 'ns/op',
      better: 'lower',
      target: { reach: 80 },
    },
    {
      bench: '4 hot path',
      metric: 'track() over 1M distinct keys',
      ours: ours.trackFlood,
      baseline: base.trackFlood,
      unit: 'ns/op',
      better: 'lower',
      note: 'naive flushes its map each round',
    },
  ];
  return rows;
});
