/**
 * The ioredis wrapper's CPU cost per GET, beside a plain client: a hot GET answered locally
 * (ns/op, beside `hk.get`), and a cold GET that goes to a real redis-server (CPU ns/op, user +
 * system), in batches of 100 in flight and one at a time (awaited: every command its own breaker
 * watch). Median of 7 rounds. A protocol peer stands in for the hub and promotes the key.
 *
 *   pnpm bench --only ioredis-get
 *   node --import tsx test/bench/ioredis-get.bench.ts        # WRAPPER=<module path> to compare another wrapper
 */
import { peerWrappedRedis } from '../support/peer-wrapped-redis.ts';
import { benchMain, type BenchRow } from './harness.ts';

const { withHotKeys } = (await import(
  process.env.WRAPPER ?? '@hotkey/sdk/ioredis'
)) as typeof import('@hotkey/sdk/ioredis');

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function cpuPerOp(
  ops: number,
  batch: number,
  run: () => Promise<unknown>,
): Promise<{ cpuNs: number; wallNs: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let done = 0; done < ops; done += batch) {
    const all: Promise<unknown>[] = [];
    for (let i = 0; i < batch; i++) all.push(run());
    await Promise.all(all);
  }
  const wallNs = Number(process.hrtime.bigint() - t0) / ops;
  const cpu = process.cpuUsage(cpu0);
  return { cpuNs: ((cpu.user + cpu.system) * 1000) / ops, wallNs };
}

benchMain(async ({ quick }) => {
  const rounds = quick ? 2 : 7;
  const fixture = await peerWrappedRedis(withHotKeys);
  const { hk, plain, wrapped } = fixture;
  try {
    await plain.set('item:hot', 'v'.repeat(64));
    await plain.set('item:cold', 'v'.repeat(64));
    await fixture.promote(['item:hot']);
    await wrapped.get('item:hot');
    const rows: Record<string, number[]> = {
      hkHit: [],
      wrappedHit: [],
      plainCold: [],
      wrappedCold: [],
      plainAwaited: [],
      wrappedAwaited: [],
    };
    for (let round = 0; round < rounds; round++) {
      rows.hkHit!.push((await cpuPerOp(200_000, 1000, () => hk.get('item:hot', () => 'x'))).cpuNs);
      rows.wrappedHit!.push((await cpuPerOp(200_000, 1000, () => wrapped.get('item:hot'))).cpuNs);
      rows.plainCold!.push((await cpuPerOp(20_000, 100, () => plain.get('item:cold'))).cpuNs);
      rows.wrappedCold!.push((await cpuPerOp(20_000, 100, () => wrapped.get('item:cold'))).cpuNs);
      rows.plainAwaited!.push((await cpuPerOp(5_000, 1, () => plain.get('item:cold'))).cpuNs);
      rows.wrappedAwaited!.push((await cpuPerOp(5_000, 1, () => wrapped.get('item:cold'))).cpuNs);
    }
    const out = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, Math.round(median(v))]));
    const note = `wrapper ${process.env.WRAPPER ?? 'current'}; median of ${rounds} rounds`;
    const result: BenchRow[] = [
      {
        bench: 'ioredis GET',
        metric: 'hot GET hit through the wrapper (baseline: hk.get hit)',
        ours: out.wrappedHit!,
        baseline: out.hkHit!,
        unit: 'ns/op',
        better: 'lower',
        note,
      },
      {
        bench: 'ioredis GET',
        metric: 'cold GET, 100 in flight, CPU (baseline: plain ioredis)',
        ours: out.wrappedCold!,
        baseline: out.plainCold!,
        unit: 'ns/op',
        better: 'lower',
        note,
      },
      {
        bench: 'ioredis GET',
        metric: 'cold GET awaited one at a time, CPU (baseline: plain ioredis)',
        ours: out.wrappedAwaited!,
        baseline: out.plainAwaited!,
        unit: 'ns/op',
        better: 'lower',
        note,
      },
    ];
    return result;
  } finally {
    await fixture.close();
  }
});
