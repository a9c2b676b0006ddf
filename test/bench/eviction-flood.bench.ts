/**
 * Eviction flood: one connection reports fresh unique keys at threshold − 1 (12,000 a frame, as
 * fast as its socket drains) against a real hub process, while two legit SDK instances probe how
 * long a fresh key takes to be promoted on both (the flood measurement of test/fault/floods.ts).
 * Legit detection p50 / p95 before the flood (the baseline column) and during it, and the legit
 * promotions missed (not hot within 4 s), in one run.
 *
 *   pnpm bench --only eviction-flood
 */
import { HubProcess } from '../support/hub-process.ts';
import { floodHubArgs, measureAttack } from '../fault/floods.ts';
import { benchMain, type BenchRow } from './harness.ts';

benchMain(async ({ quick }) => {
  const hub = await HubProcess.start({ args: floodHubArgs('evict') });
  try {
    const f = await measureAttack(hub, 'evict', { attackSeconds: quick ? 3 : 8, baselineProbes: quick ? 2 : 6 });
    const bench = 'eviction flood';
    const note = `${f.attack.probes} probes during the flood, ${f.baseline.probes} before; ${f.protection.keysEvicted} keys evicted, ${f.protection.keysEvictedOverShare} from the flooding session's share, ${f.protection.keysRefused} refused`;
    return [
      {
        bench,
        metric: 'legit detection p50, flood (baseline: no flood)',
        ours: f.attack.p50,
        baseline: f.baseline.p50,
        unit: 'ms',
        better: 'lower',
        note,
      },
      {
        bench,
        metric: 'legit detection p95, flood (baseline: no flood)',
        ours: f.attack.p95,
        baseline: f.baseline.p95,
        unit: 'ms',
        better: 'lower',
        target: { reach: 2 * f.baseline.p95 },
      },
      {
        bench,
        metric: 'legit promotions missed, flood (baseline: no flood)',
        ours: f.attack.lost,
        baseline: f.baseline.lost,
        unit: 'probes',
        better: 'lower',
        target: { reach: 0 },
      },
    ] satisfies BenchRow[];
  } finally {
    await hub.stop('SIGKILL');
  }
});
