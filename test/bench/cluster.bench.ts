/**
 * Benchmark 7 — cluster failover: three `hotkey-hub --redis` processes on a real redis-server; an
 * SDK seeded with one hub connects to all three. A hub is killed with SIGKILL and, from that
 * instant, keys it owned surge at 10 × the threshold; the figure is the time until the SDK hears
 * the promotion of each lost key from its new owner (membership TTL, SDK rerouting, window fill
 * and broadcast all included). Repeated over several rounds, each on a fresh cluster.
 *
 * The scale-out ratio (three hubs vs one under the same load) is scaleout.bench.ts.
 */
import { HotKeyClient } from '@hotkey/sdk';
import { APP, Cluster } from '../cluster/cluster-harness.ts';
import { benchMain, percentile, type BenchRow } from './harness.ts';
import { waitFor } from '../support/wait.ts';

const THRESHOLD = 1000;
const IDS = ['h1', 'h2', 'h3'];
const VICTIM = 'h3';
const KEYS_PER_ROUND = 3;

async function round(r: number): Promise<number[]> {
  const cluster = await Cluster.start(IDS, [{ match: '*', threshold: THRESHOLD }]);
  const client = new HotKeyClient({ app: APP, hubs: cluster.hub('h1').url, instanceId: `failover-${r}` });
  client.on('error', () => undefined);
  let surge: NodeJS.Timeout | undefined;
  try {
    await client.ready({ signal: AbortSignal.timeout(10_000) });
    await waitFor('SDK connected to every hub', () => client.hubs().length === IDS.length, 10_000);
    const keys = Cluster.keysOwnedBy(IDS, VICTIM, KEYS_PER_ROUND, `lost:${r}:`);
    const promotedAt = new Map<string, number>();
    client.on('promote', (key, info) => {
      if (keys.includes(key) && info.hub !== VICTIM && !promotedAt.has(key)) promotedAt.set(key, performance.now());
    });
    const killedAt = performance.now();
    cluster.hub(VICTIM).child.kill('SIGKILL');
    // 10 × threshold per key from the instant of the kill, in 5 ms steps
    surge = setInterval(() => {
      for (const key of keys) for (let i = 0; i < (10 * THRESHOLD * 5) / 1000; i++) client.track(key);
    }, 5);
    await waitFor('new owners promote every lost key', () => promotedAt.size === keys.length, 20_000);
    return keys.map((k) => promotedAt.get(k)! - killedAt);
  } finally {
    clearInterval(surge);
    await client.close();
    await cluster.close();
  }
}

benchMain(async ({ quick }) => {
  const rounds = quick ? 1 : 3;
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) times.push(...(await round(r)));
  const rows: BenchRow[] = [
    {
      bench: '7 cluster failover',
      metric: 'kill -9 of a hub → lost key promoted by new owner, p50',
      ours: percentile(times, 50),
      unit: 'ms',
      better: 'lower',
      target: { aim: 2000 },
      note: `3 hubs + redis-server, ${rounds} rounds × ${KEYS_PER_ROUND} keys, surge 10× threshold from the kill`,
    },
    {
      bench: '7 cluster failover',
      metric: 'same, max',
      ours: Math.max(...times),
      unit: 'ms',
      better: 'lower',
      target: { aim: 2000 },
    },
  ];
  return rows;
});
