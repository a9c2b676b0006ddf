/**
 * What a write costs, side by side in one run (issue #32): one real hub in its own process, one
 * real redis-server, a writer (HotKeyClient + withHotKeys over ioredis) and a fleet of idle
 * instances of the same app — simulated (sim-sdk.worker.ts: a real WebSocket each, speaking the
 * real protocol, answering every Invalidate with Applied and sending what an idle SDK sends, IDLE
 * below) that read nothing and hold nothing; and, to check that model, 100 real SDK instances.
 *
 * At 0, 50, 350 and 2,000 idle instances:
 * - SET of a key never written before, through the wrapper against plain ioredis, alternating
 *   one by one (which goes first alternates too), each awaited: p50 and p99;
 * - the hub's CPU per wrapped write: its CPU over the writes, less its idle CPU over as long
 *   (measured just before, at the same fleet size), divided by the writes;
 * - the hub's CPU per second with the fleet idle; per idle instance: over the hub with none;
 *   then the same for 100 real HotKeyClients (sdk.worker.ts), idle past their first lease.
 * Then, the fleet gone, cold GET CPU wrapped ÷ plain for ioredis and node-redis (cold-get.ts:
 * 100 in flight, alternating, a protocol peer as the hub, the SDK as tsc builds it).
 *
 * The targets are the issue's: hub CPU per write ≤ 100 µs, idle ≤ 40 µs/s per instance, wrapped
 * SET p50 ≤ plain + 0.5 ms, cold GET CPU ≤ 1.1 × plain.
 *
 *   pnpm bench --only writecost [--quick]
 */
import { Redis } from 'ioredis';
import { DEFAULT_CLIENT_OPTIONS, HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { DEFAULT_TUNABLES } from '../../hub/src/core/tunables.ts';
import { RedisServer } from '../support/redis-server.ts';
import { delay, within } from '../support/wait.ts';
import { coldGets, coldRows, shippedSdk } from './cold-get.ts';
import { benchMain, percentile, type BenchRow, type Worker } from './harness.ts';
import { startServer, type ServerProcess } from './server-process.ts';
import { SimFleet } from './sim-fleet.ts';
import { connectSdkWorkers } from './sdk-workers.ts';

/** idle instances at each step, and the wrapped writes measured there (full run; --quick: a tenth) */
const FLEET = [
  { idle: 0, writes: 300 },
  { idle: 50, writes: 300 },
  { idle: 350, writes: 300 },
  { idle: 2000, writes: 150 },
];
/** generator processes for the idle fleet */
const GENERATORS = 2;
/**
 * What an idle SDK sends its hub in the steady state, as the simulated instances play it. Since
 * leases on demand (docs/internals/holders.md §10) an SDK that reads and holds nothing asks for
 * no lease once the first lease after its Welcome is over, and pings at most every
 * quietPingIntervalMs (the hub's own ping, every 15 s, usually spares it that). WRITECOST_IDLE=v2
 * plays the SDK before that: a lease ask every leaseMs / 4 and a ping every pingIntervalMs.
 */
const IDLE =
  process.env.WRITECOST_IDLE === 'v2'
    ? { leaseAskMs: DEFAULT_TUNABLES.leaseMs / 4, pingMs: DEFAULT_CLIENT_OPTIONS.pingIntervalMs }
    : { leaseAskMs: 0, pingMs: DEFAULT_CLIENT_OPTIONS.quietPingIntervalMs };
/** real SDK instances whose idle cost checks the model */
const REAL_IDLE = 100;
/** the hub acks nothing before one fence after its start (PROTOCOL.md, H16) */
const START_FENCE_MS = DEFAULT_TUNABLES.leaseMs * 1.125 + 500;

interface Step {
  idle: number;
  /** hub CPU ms per s, fleet idle */
  idleCpuMsPerS: number;
  plain: number[];
  wrapped: number[];
  /** hub CPU µs per wrapped write, its idle CPU over as long taken off */
  hubUsPerWrite: number;
  /** Applied frames the fleet sent per wrapped write (each instance, each write: the broadcast reached it) */
  appliedPerWrite: number;
}

/** ms of one awaited call */
async function timed(call: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await call();
  return performance.now() - t0;
}

/** The hub's CPU ms per s over the next `ms`. */
async function hubCpuMsPerS(hub: ServerProcess, ms: number): Promise<number> {
  const s0 = await hub.stats();
  const t0 = performance.now();
  await delay(ms);
  const s1 = await hub.stats();
  return ((s1.cpuMs - s0.cpuMs) * 1000) / (performance.now() - t0);
}

async function measureStep(
  hub: ServerProcess,
  fleet: SimFleet,
  plain: Redis,
  wrapped: Redis,
  opts: { idle: number; writes: number; idleMs: number },
): Promise<Step> {
  // the fleet's Hellos moved the instance count: Config goes out to all, then things settle
  await delay(1000);
  const idleRate = await hubCpuMsPerS(hub, opts.idleMs);
  const value = 'v'.repeat(64);
  const p: number[] = [];
  const w: number[] = [];
  const f0 = await fleet.stats();
  const s0 = await hub.stats();
  const w0 = performance.now();
  for (let i = 0; i < opts.writes; i++) {
    const plainSet = () => plain.set(`wc:${opts.idle}:plain:${i}`, value);
    const wrappedSet = () => wrapped.set(`wc:${opts.idle}:wrapped:${i}`, value);
    if (i % 2 === 0) {
      p.push(await timed(plainSet));
      w.push(await timed(wrappedSet));
    } else {
      w.push(await timed(wrappedSet));
      p.push(await timed(plainSet));
    }
  }
  const spanMs = performance.now() - w0;
  const s1 = await hub.stats();
  const f1 = await fleet.stats();
  const hubUsPerWrite = ((s1.cpuMs - s0.cpuMs - (idleRate * spanMs) / 1000) * 1000) / opts.writes;
  return {
    idle: opts.idle,
    idleCpuMsPerS: idleRate,
    plain: p,
    wrapped: w,
    hubUsPerWrite,
    appliedPerWrite: (f1.applied - f0.applied) / opts.writes,
  };
}

async function writeSteps(quick: boolean): Promise<{ steps: Step[]; realIdle: { without: number; withThem: number } }> {
  const idleMs = quick ? 1000 : 4000;
  const workers: Worker[] = [];
  const redis = await RedisServer.start();
  const hub = await startServer('hub');
  const hk = new HotKeyClient({ app: 'bench', hubs: hub.url });
  const plain = new Redis(redis.url);
  const wrapped = withHotKeys(new Redis(redis.url), hk);
  try {
    await hk.ready({ signal: AbortSignal.timeout(10_000) });
    // the first ack comes one fence after the hub's start; the warm-up waits it out
    await within('the first acked write', wrapped.set('wc:warm', 'v'), START_FENCE_MS + 5000);
    for (let i = 0; i < 50; i++) {
      await plain.set(`wc:warm:${i}`, 'v');
      await wrapped.set(`wc:warm:${i}`, 'v');
    }
    const fleet = SimFleet.start(workers, GENERATORS);
    const steps: Step[] = [];
    for (const { idle, writes } of FLEET) {
      await fleet.grow(hub.url, idle, 60_000);
      fleet.leases(IDLE.leaseAskMs);
      fleet.pings(IDLE.pingMs);
      const n = quick ? Math.ceil(writes / 10) : writes;
      steps.push(await measureStep(hub, fleet, plain, wrapped, { idle, writes: n, idleMs }));
    }
    for (const worker of workers.splice(0)) await worker.kill();
    // real SDKs, idle past the first lease after their Welcome, against the hub without them just before
    await delay(1000);
    const without = await hubCpuMsPerS(hub, idleMs);
    await connectSdkWorkers(workers, hub.url, REAL_IDLE, 'sdk', 60_000);
    await delay(DEFAULT_TUNABLES.leaseMs + 1500);
    const withThem = await hubCpuMsPerS(hub, idleMs);
    return { steps, realIdle: { without, withThem } };
  } finally {
    for (const worker of workers) await worker.kill();
    plain.disconnect();
    wrapped.disconnect();
    await hk.close();
    await hub.stop();
    await redis.stop();
  }
}

benchMain(async ({ quick }) => {
  const { steps, realIdle } = await writeSteps(quick);
  const cold = await coldGets(await shippedSdk(), quick ? 2 : 7);
  const bench = 'writecost';
  const rows: BenchRow[] = [];
  const none = steps[0]!;
  for (const s of steps) {
    const at = `${s.idle.toLocaleString('en')} idle instances`;
    const note = `${s.wrapped.length} writes each, alternating; ${s.appliedPerWrite.toFixed(0)} Applied per write from the fleet`;
    const plainP50 = percentile(s.plain, 50);
    rows.push(
      {
        bench,
        metric: `wrapped SET p50, ${at} (baseline: plain SET)`,
        ours: percentile(s.wrapped, 50),
        baseline: plainP50,
        unit: 'ms',
        better: 'lower',
        target: { reach: plainP50 + 0.5 },
        note,
      },
      {
        bench,
        metric: `wrapped SET p99, ${at} (baseline: plain SET)`,
        ours: percentile(s.wrapped, 99),
        baseline: percentile(s.plain, 99),
        unit: 'ms',
        better: 'lower',
      },
      {
        bench,
        metric: `hub CPU per wrapped write, ${at}`,
        ours: s.hubUsPerWrite,
        unit: 'µs',
        better: 'lower',
        target: { reach: 100 },
        note: 'hub CPU over the writes less its idle CPU over as long',
      },
    );
  }
  for (const s of steps.slice(1)) {
    rows.push({
      bench,
      metric: `hub CPU per idle instance per second, ${s.idle.toLocaleString('en')} idle`,
      ours: ((s.idleCpuMsPerS - none.idleCpuMsPerS) * 1000) / s.idle,
      unit: 'µs/s',
      better: 'lower',
      target: { reach: 40 },
      note: `hub idle ${s.idleCpuMsPerS.toFixed(2)} ms/s, ${none.idleCpuMsPerS.toFixed(2)} with none; simulated: a lease ask every ${IDLE.leaseAskMs || '—'} ms, a ping every ${IDLE.pingMs} ms`,
    });
  }
  rows.push({
    bench,
    metric: `hub CPU per idle instance per second, ${REAL_IDLE} real SDK instances`,
    ours: ((realIdle.withThem - realIdle.without) * 1000) / REAL_IDLE,
    unit: 'µs/s',
    better: 'lower',
    target: { reach: 40 },
    note: `hub idle ${realIdle.withThem.toFixed(2)} ms/s, ${realIdle.without.toFixed(2)} just before; HotKeyClients reading nothing, past their first lease`,
  });
  rows.push(...coldRows(bench, cold));
  return rows;
});
