/**
 * Benchmark 12b (ioredis) — GETs of a hot key that reach Redis, cluster-wide, per promotion and
 * per refresh period, with 100 instances reading it through the ioredis wrapper:
 * a rule without `share` (every instance loads the key when it turns hot and again each
 * time its value expires) beside `push: true` (one instance reads Redis and pushes its cache
 * record through the hub), in the same run, against one real hub in its own process and one real
 * redis-server. Each instance is its own HotKeyClient with its own wrapped `new Redis()` (and,
 * once it loads a hot key, its own two tracking connections).
 *
 * A key is made hot by counting alone (`hk.track`, no read); then every instance reads it
 * through its wrapper every 10 ms. The fresh instances' first hot key (WARM_KEY) is reported on
 * its own: their tracking connections are made at its first load. Then the measured key: GETs
 * in the first 500 ms are the promotion's, the next 4 s span refresh periods (cacheTtlMs 1000;
 * same windows as push-loads.bench.ts). GETs are counted per key as Redis executed them
 * (MONITOR, which shows the GET inside a tracked load's MULTI too).
 *
 * Then an outside write (plain ioredis, no SDK), three times: ms from the SET's reply until every
 * instance served the new value through its wrapper (each polls every 1 ms), and the GETs that
 * took. With `share`, only the filler's tracking hears the write; it invalidates cluster-wide
 * through the hub (redis/read/shared-records.ts), one hop more than each instance's own tracking.
 */
import { Redis } from 'ioredis';
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { benchMain, type BenchRow } from './harness.ts';
import { PUSH_HUB, PUSH_TTL_MS } from './push-apps.ts';
import { startServer } from './server-process.ts';
import { RedisServer } from '../support/redis-server.ts';
import { delay, waitFor, within } from '../support/wait.ts';

const INSTANCES = 100;
/** the measured key; WARM_KEY is promoted first, so that the instances' tracking connections are up */
const KEY = 'item:flash';
const WARM_KEY = 'item:warm';
/** the promotion's GETs: before the first refresh (0.8 × TTL less a tick and jitter) */
const PROMOTION_MS = 500;
const OUTSIDE_WRITES = 3;

interface Instance {
  hk: HotKeyClient;
  redis: Redis;
}

interface Run {
  /** GETs of the first key the fresh instances found hot (their tracking connections being made) */
  coldPromotion: number;
  promotion: number;
  /** GETs per cacheTtlMs after the promotion */
  perTtl: number;
  injected: number;
  /** per outside write: ms until every instance served its value, and the GETs until then */
  writes: { ms: number; gets: number }[];
}

/**
 * GETs per key that reached Redis, as Redis executed them (MONITOR shows the GET inside a tracked
 * load's MULTI too). `of(key)` sends a marker (ECHO; `send` may send it in a MULTI with another
 * command) and answers once MONITOR showed it: every GET Redis executed before it is counted, none after.
 */
async function countGets(plain: Redis): Promise<{
  of(key: string, send?: (mark: string) => Promise<unknown>): Promise<number>;
  stop(): void;
}> {
  const counts = new Map<string, number>();
  const marks = new Map<string, () => void>();
  let seq = 0;
  const monitor = await plain.monitor();
  monitor.on('monitor', (_time: string, args: string[]) => {
    const name = args[0]?.toLowerCase();
    if (name === 'get' && args.length === 2) counts.set(args[1]!, (counts.get(args[1]!) ?? 0) + 1);
    else if (name === 'echo') marks.get(args[1]!)?.();
  });
  return {
    async of(key, send = (mark) => plain.echo(mark)) {
      const mark = `hk-bench-mark-${++seq}`;
      let count = 0;
      const seen = new Promise<void>((resolve) =>
        marks.set(mark, () => {
          count = counts.get(key) ?? 0;
          resolve();
        }),
      );
      await send(mark);
      await within(`MONITOR to show ${mark}`, seen, 5000);
      marks.delete(mark);
      return count;
    },
    stop: () => monitor.disconnect(),
  };
}

/** Makes `key` hot by counting only (no read), then has every instance read it through its wrapper every 10 ms. */
async function promoteAndRead(app: string, group: readonly Instance[], key: string): Promise<NodeJS.Timeout> {
  const counting = setInterval(() => {
    for (const r of group) r.hk.track(key);
  }, 20);
  try {
    await waitFor(`${app}: ${key} hot on every instance`, () => group.every((r) => r.hk.isHot(key)), 15_000);
  } finally {
    clearInterval(counting);
  }
  return setInterval(() => {
    for (const r of group) r.redis.get(key).catch(() => {});
  }, 10);
}

async function run(hubUrl: string, server: RedisServer, app: string, steadyMs: number): Promise<Run> {
  const plain = new Redis(server.port, '127.0.0.1');
  const gets = await countGets(plain);
  const group: Instance[] = [];
  let timer: NodeJS.Timeout | undefined;
  try {
    for (let i = 0; i < INSTANCES; i++) {
      const hk = new HotKeyClient({ app, hubs: hubUrl, instanceId: `${app}-${i}`, reconnectMaxMs: 500 });
      group.push({ hk, redis: withHotKeys(new Redis(server.port, '127.0.0.1'), hk) });
    }
    await Promise.all(group.map((r) => r.hk.ready({ signal: AbortSignal.timeout(30_000) })));
    await Promise.all(group.map((r) => r.redis.ping()));
    await plain.set(WARM_KEY, 'w');
    await plain.set(KEY, 'v0');

    timer = await promoteAndRead(app, group, WARM_KEY);
    await delay(PROMOTION_MS);
    const coldPromotion = await gets.of(WARM_KEY);
    await waitFor(
      `${app}: ${WARM_KEY} served locally everywhere`,
      () => group.every((r) => r.hk.stats().hits > 0),
      10_000,
    );
    clearInterval(timer);

    timer = await promoteAndRead(app, group, KEY);
    await delay(PROMOTION_MS);
    const promotion = await gets.of(KEY);
    await delay(steadyMs);
    const steady = (await gets.of(KEY)) - promotion;
    const injected = group.reduce((n, r) => n + r.hk.stats().push.valuesInjected, 0);

    const writes: Run['writes'] = [];
    for (let w = 1; w <= OUTSIDE_WRITES; w++) {
      const value = `v${w}`;
      // the mark and the write in one MULTI: the GETs counted after it are those after the write
      let t0 = 0;
      const gets0 = await gets.of(KEY, async (mark) => {
        await plain.multi().echo(mark).set(KEY, value).exec();
        t0 = performance.now();
      });
      await Promise.all(
        group.map((r) =>
          waitFor(`${r.hk.instanceId} serves ${value}`, async () => (await r.redis.get(KEY)) === value, 5000, 1),
        ),
      );
      writes.push({ ms: performance.now() - t0, gets: (await gets.of(KEY)) - gets0 });
      await delay(1500); // settle: past PUSH_GUARD_MS, the key cached (and pushed) again
    }
    return { coldPromotion, promotion, perTtl: (steady * PUSH_TTL_MS) / steadyMs, injected, writes };
  } finally {
    clearInterval(timer);
    await Promise.all(group.map((r) => r.hk.close()));
    for (const r of group) r.redis.disconnect();
    gets.stop();
    plain.disconnect();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

benchMain(async ({ quick }) => {
  const steadyMs = quick ? 2000 : 4000;
  const server = await RedisServer.start();
  const hub = await startServer('hub', PUSH_HUB);
  let today: Run;
  let push: Run;
  try {
    today = await run(hub.url, server, 'today', steadyMs);
    push = await run(hub.url, server, 'push', steadyMs);
  } finally {
    await hub.stop();
    await server.stop();
  }
  const note = `${INSTANCES} wrapped ioredis clients + SDK instances in one process, a GET each every 10 ms; real redis-server`;
  const rows: BenchRow[] = [
    {
      bench: '12b value push (ioredis)',
      metric: `GETs reaching Redis at promotion, fresh instances' first hot key (${INSTANCES} instances)`,
      ours: push.coldPromotion,
      baseline: today.coldPromotion,
      unit: 'GETs',
      better: 'lower',
      note: `tracking connections being made: a load without them is not cached (today: an instance GETs on every read until they are up; share: the filler waits up to 250 ms for them); ${PROMOTION_MS} ms`,
    },
    {
      bench: '12b value push (ioredis)',
      metric: `GETs reaching Redis at promotion, tracking up (${INSTANCES} instances)`,
      ours: push.promotion,
      baseline: today.promotion,
      unit: 'GETs',
      better: 'lower',
      target: { reach: 2 },
      note: `${push.injected} records injected (both keys, refreshes included); ${note}`,
    },
    {
      bench: '12b value push (ioredis)',
      metric: 'GETs reaching Redis per cacheTtlMs after it',
      ours: push.perTtl,
      baseline: today.perTtl,
      unit: 'GETs',
      better: 'lower',
      target: { reach: 2.5 },
      note: `push refreshes every 0.8 cacheTtlMs (≤ 2 per refresh period: ≤ 2.5 per cacheTtlMs); ${(steadyMs / 1000).toFixed(0)} s`,
    },
    {
      bench: '12b value push (ioredis)',
      metric: `outside SET (plain ioredis): ms until all ${INSTANCES} instances serve the new value, median of ${OUTSIDE_WRITES}`,
      ours: median(push.writes.map((w) => w.ms)),
      baseline: median(today.writes.map((w) => w.ms)),
      unit: 'ms',
      better: 'lower',
      note: `each instance polls every 1 ms; after a drop an instance ignores pushes for PUSH_GUARD_MS (1 s), so with share too each one loads; all: push ${push.writes.map((w) => w.ms.toFixed(0)).join('/')}, today ${today.writes.map((w) => w.ms.toFixed(0)).join('/')} ms; GETs until then: push ${push.writes.map((w) => w.gets).join('/')}, today ${today.writes.map((w) => w.gets).join('/')}`,
    },
  ];
  return rows;
});
