/**
 * The ioredis wrapper's CPU cost per GET, beside a plain client: a hot GET answered locally
 * (ns/op, beside `hk.get`), and cold GETs that go to a real redis-server (CPU ns/op, user +
 * system), each of a key never read before (cold-get.ts): 100 in flight, and one at a time
 * (awaited: every command its own breaker watch). Median of 7 rounds, the two clients alternated
 * in each. A protocol peer stands in for the hub and promotes the hot key. The wrapper is the
 * SDK as tsc builds it (cold-get.ts `shippedSdk`).
 *
 *   pnpm bench --only ioredis-get
 *   node --import tsx test/bench/ioredis-get.bench.ts        # WRAPPER=<module path> to compare another wrapper
 */
import { peerWrappedRedis } from '../support/peer-wrapped-redis.ts';
import { coldGetCpu, cpuPerOp, ioredisColdGet, median, shippedSdk } from './cold-get.ts';
import { benchMain, type BenchRow } from './harness.ts';

benchMain(async ({ quick }) => {
  const rounds = quick ? 2 : 7;
  const fixture = process.env.WRAPPER
    ? await peerWrappedRedis(((await import(process.env.WRAPPER)) as typeof import('@hotkey/sdk/ioredis')).withHotKeys)
    : await shippedSdk().then((sdk) => peerWrappedRedis(sdk.ioredis, sdk.HotKeyClient));
  const { hk, plain, wrapped } = fixture;
  try {
    await plain.set('item:hot', 'v'.repeat(64));
    await fixture.promote(['item:hot']);
    await wrapped.get('item:hot');
    const hkHit: number[] = [];
    const wrappedHit: number[] = [];
    for (let round = 0; round < rounds; round++) {
      hkHit.push(await cpuPerOp(200_000, 1000, () => hk.get('item:hot', () => 'x')));
      wrappedHit.push(await cpuPerOp(200_000, 1000, () => wrapped.get('item:hot')));
    }
    const cold = await ioredisColdGet(fixture, rounds);
    const awaited = await coldGetCpu(plain, wrapped, { rounds, ops: 5_000, inFlight: 1, prefix: 'awaited' });
    const note = `wrapper ${process.env.WRAPPER ?? 'built from this tree'}; median of ${rounds} rounds`;
    const row = (metric: string, ours: number, baseline: number): BenchRow => ({
      bench: 'ioredis GET',
      metric,
      ours: Math.round(ours),
      baseline: Math.round(baseline),
      unit: 'ns/op',
      better: 'lower',
      note,
    });
    return [
      row('hot GET hit through the wrapper (baseline: hk.get hit)', median(wrappedHit), median(hkHit)),
      row('cold GET, 100 in flight, CPU (baseline: plain ioredis)', cold.wrapped, cold.plain),
      row('cold GET awaited one at a time, CPU (baseline: plain ioredis)', awaited.wrapped, awaited.plain),
    ];
  } finally {
    await fixture.close();
  }
});
