/**
 * The node-redis adapter's CPU cost per GET, beside a plain node-redis client (the sibling of
 * ioredis-get.bench.ts): a hot GET answered locally (beside `hk.get`), and cold GETs that go to a
 * real redis-server (CPU ns/op, user + system), each of a key never read before (a key read again
 * and again would surge and be served locally): one at a time (awaited), 100 and 1,000 in flight
 * (the 1M-key sweep of node-redis.bench.ts reads 1,000 at a time). Median of 7 rounds, the two
 * clients alternated in each. A protocol peer stands in for the hub and promotes the hot key. The
 * adapter is the SDK as tsc builds it (cold-get.ts `shippedSdk`).
 *
 *   pnpm bench --only node-redis-get
 */
import { peerWrappedNodeRedis } from '../support/peer-wrapped-node-redis.ts';
import { cpuPerOp, median, shippedSdk } from './cold-get.ts';
import { benchMain, type BenchRow } from './harness.ts';

benchMain(async ({ quick }) => {
  const rounds = quick ? 2 : 7;
  const sdk = await shippedSdk();
  const fixture = await peerWrappedNodeRedis(sdk.nodeRedis, sdk.HotKeyClient);
  const { hk, plain, wrapped } = fixture;
  try {
    await plain.set('item:hot', 'v'.repeat(64));
    await fixture.promote(['item:hot']);
    await wrapped.get('item:hot');
    let sweep = 0; // keys never read before, as the sweep's
    const distinct = () => `sweep:${sweep++}`;
    const rows: Record<string, number[]> = {
      hkHit: [],
      wrappedHit: [],
      plainAwaited: [],
      wrappedAwaited: [],
      plainCold: [],
      wrappedCold: [],
      plainSweep: [],
      wrappedSweep: [],
    };
    const sweepOps = quick ? 20_000 : 100_000;
    for (let round = 0; round < rounds; round++) {
      rows.hkHit!.push(await cpuPerOp(200_000, 1000, () => hk.get('item:hot', () => 'x')));
      rows.wrappedHit!.push(await cpuPerOp(200_000, 1000, () => wrapped.get('item:hot')));
      rows.plainAwaited!.push(await cpuPerOp(5_000, 1, () => plain.get(distinct())));
      rows.wrappedAwaited!.push(await cpuPerOp(5_000, 1, () => wrapped.get(distinct())));
      rows.plainCold!.push(await cpuPerOp(20_000, 100, () => plain.get(distinct())));
      rows.wrappedCold!.push(await cpuPerOp(20_000, 100, () => wrapped.get(distinct())));
      rows.plainSweep!.push(await cpuPerOp(sweepOps, 1000, () => plain.get(distinct())));
      rows.wrappedSweep!.push(await cpuPerOp(sweepOps, 1000, () => wrapped.get(distinct())));
    }
    const out = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, Math.round(median(v))]));
    const note = `median of ${rounds} rounds`;
    const row = (metric: string, ours: number, baseline: number): BenchRow => ({
      bench: 'node-redis GET',
      metric,
      ours,
      baseline,
      unit: 'ns/op',
      better: 'lower',
      note,
    });
    return [
      row('hot GET hit through the adapter (baseline: hk.get hit)', out.wrappedHit!, out.hkHit!),
      row('cold GET awaited one at a time, CPU (baseline: plain node-redis)', out.wrappedAwaited!, out.plainAwaited!),
      row('cold GETs, 100 in flight, CPU (baseline: plain node-redis)', out.wrappedCold!, out.plainCold!),
      row('cold GETs, 1,000 in flight, CPU (baseline: plain node-redis)', out.wrappedSweep!, out.plainSweep!),
    ];
  } finally {
    await fixture.close();
  }
});
