/**
 * Benchmark 12b — loader calls cluster-wide per promotion and per refresh period with 100 SDK
 * instances: without value push (every instance loads the key when it turns hot and again each
 * time its value expires) beside value push (`push: true`: one instance loads, the hub
 * broadcasts the value), in the same run, against one real hub in its own process. The key is
 * made hot by counting alone; then every instance reads it every 10 ms through a loader of 2 ms:
 * loader calls in the first 500 ms are the promotion's, the next 4 s span refresh periods
 * (cacheTtlMs 1000).
 */
import { HotKeyClient } from '@hotkey/sdk';
import { benchMain, type BenchRow } from './harness.ts';
import { PUSH_HUB, PUSH_TTL_MS } from './push-apps.ts';
import { startServer } from './server-process.ts';
import { delay, waitFor } from '../support/wait.ts';

const INSTANCES = 100;
const KEY = 'item:flash';
/** the promotion's loads: before the first refresh (0.8 × TTL less a tick and jitter) */
const PROMOTION_MS = 500;

interface Run {
  promotion: number;
  /** loader calls per cacheTtlMs after the promotion */
  perTtl: number;
  injected: number;
}

async function loadsFor(url: string, app: string, steadyMs: number): Promise<Run> {
  const clients = Array.from(
    { length: INSTANCES },
    (_, i) => new HotKeyClient({ app, hubs: url, instanceId: `${app}-${i}`, reconnectMaxMs: 500 }),
  );
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.all(clients.map((hk) => hk.ready({ signal: AbortSignal.timeout(30_000) })));
    let calls = 0;
    const loader = () => {
      calls++;
      return new Promise<object>((resolve) => setTimeout(() => resolve({ price: 42 }), 2));
    };
    // hot by counting only: no loader call before the promotion
    const counting = setInterval(() => {
      for (const hk of clients) hk.track(KEY);
    }, 20);
    try {
      await waitFor(`${app}: the key hot on every instance`, () => clients.every((hk) => hk.isHot(KEY)), 15_000);
    } finally {
      clearInterval(counting);
    }
    timer = setInterval(() => {
      for (const hk of clients) hk.get(KEY, loader).catch(() => {});
    }, 10);
    await delay(PROMOTION_MS);
    const promotion = calls;
    await delay(steadyMs);
    const perTtl = ((calls - promotion) * PUSH_TTL_MS) / steadyMs;
    const injected = clients.reduce((n, hk) => n + hk.stats().push.valuesInjected, 0);
    return { promotion, perTtl, injected };
  } finally {
    clearInterval(timer);
    await Promise.all(clients.map((hk) => hk.close()));
  }
}

benchMain(async ({ quick }) => {
  const steadyMs = quick ? 2000 : 4000;
  const hub = await startServer('hub', PUSH_HUB);
  let today: Run;
  let push: Run;
  try {
    today = await loadsFor(hub.url, 'today', steadyMs);
    push = await loadsFor(hub.url, 'push', steadyMs);
  } finally {
    await hub.stop();
  }
  const note = `${INSTANCES} SDK instances in one process, reads every 10 ms each, loader 2 ms`;
  const rows: BenchRow[] = [
    {
      bench: '12b value push',
      metric: `loader calls cluster-wide at promotion (${INSTANCES} instances)`,
      ours: push.promotion,
      baseline: today.promotion,
      unit: 'calls',
      better: 'lower',
      target: { reach: 2 },
      note: `${push.injected} values injected; ${note}`,
    },
    {
      bench: '12b value push',
      metric: 'loader calls cluster-wide per cacheTtlMs after it',
      ours: push.perTtl,
      baseline: today.perTtl,
      unit: 'calls',
      better: 'lower',
      note: `push refreshes every 0.8 cacheTtlMs (target ≤ 2 per refresh period: ≤ 2.5 per cacheTtlMs); ${(steadyMs / 1000).toFixed(0)} s`,
      target: { reach: 2.5 },
    },
  ];
  return rows;
});
