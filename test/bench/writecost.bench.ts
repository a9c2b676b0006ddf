/**
 * What a write costs, side by side in one run (issue #32): one real hub in its own process, one
 * real redis-server, a writer (HotKeyClient + withHotKeys over ioredis) and a fleet of idle
 * instances of the same app — simulated (sim-sdk.worker.ts: a real WebSocket each, speaking the
 * real protocol, answering every Invalidate with Applied and sending what an idle SDK sends, IDLE
 * below) that read nothing and hold nothing; and, to check that model, REAL_IDLE real SDK instances.
 *
 * At 0, 50, 350 and 2,000 idle instances:
 * - SET of a key never written before, through the wrapper against plain ioredis, alternating
 *   one by one (which goes first alternates too), each awaited: p50 and p99;
 * - the hub's CPU per wrapped write: its CPU over the writes, less its idle CPU over as long
 *   (measured just before, at the same fleet size), divided by the writes;
 * - the same with IN_FLIGHT wrapped writes in flight (no plain SET between);
 * - beside them, the floor: a bare ws echo server's CPU per frame (ws-echo.ts, its own process),
 *   the same loop and frame sizes, one at a time and IN_FLIGHT at a time, with the same fleet on
 *   the hub;
 * - the hub's CPU per second with the fleet idle, once the connections' aftermath settled
 *   (IDLE_SETTLE_MS): the median of 1 s slices, so that a stray spike (a major GC, a neighbour on
 *   the shared cores) in a short window is not charged to the instances; per idle instance: over
 *   the hub with none, measured the same way; then the same for REAL_IDLE real HotKeyClients
 *   (sdk.worker.ts), idle past their first lease.
 * Then, the fleet gone, cold GET CPU wrapped ÷ plain for ioredis and node-redis (cold-get.ts:
 * 100 in flight, alternating, a protocol peer as the hub, the SDK as tsc builds it).
 *
 * Before all that, the hub and the echo server are warmed with WARM_WRITES each, the first
 * COLD_WRITES of them measured as cold rows.
 *
 * The targets are the issue's: hub CPU per write ≤ 100 µs, idle ≤ 40 µs/s per instance, wrapped
 * SET p50 ≤ plain + 0.5 ms, cold GET CPU ≤ 1.1 × plain.
 *
 *   pnpm bench --only writecost [--quick]
 */
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { WebSocket } from 'ws';
import { DEFAULT_CLIENT_OPTIONS, HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { DEFAULT_TUNABLES } from '../../hub/src/core/tunables.ts';
import { encode, MsgType } from '../../sdk/src/wire/protocol.ts';
import { RedisServer } from '../support/redis-server.ts';
import { delay, within } from '../support/wait.ts';
import { coldGets, coldRows, shippedSdk } from './cold-get.ts';
import { benchMain, percentile, type BenchRow, type Worker } from './harness.ts';
import { describeCost, guarded, medianOf, minus, scaled, type Estimate } from './estimate.ts';
import { HUB_WARM_WRITES, START_FENCE_MS, startServer, type ServerProcess } from './server-process.ts';
import { SimFleet } from './sim-fleet.ts';
import { connectSdkWorkers } from './sdk-workers.ts';

/**
 * idle instances at each step, and the wrapped writes measured there (full run; --quick: a tenth):
 * enough that the hub's idle work left in a step's span (a heartbeat slice, a scavenge) is a small
 * part of what the writes cost, now that a write costs tens of µs and not one frame per instance
 */
const FLEET = [
  { idle: 0, writes: 1000 },
  { idle: 50, writes: 1000 },
  { idle: 350, writes: 1000 },
  { idle: 2000, writes: 1000 },
];
/** wrapped writes (each beside a plain one) before the first step; the first COLD_WRITES of them are measured as rows of their own */
const WARM_WRITES = HUB_WARM_WRITES;
/** the first writes after a server's start, measured apart (the cold rows) */
const COLD_WRITES = 1000;
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
/**
 * ms after the fleet grew before its idle cost is measured: the new sessions' aftermath (Config
 * to every session, the handshakes' buffers, the first pings) ran on for 2–3 s at 2,000 instances
 * on 2 shared cores, and a window opened 1 s after the growth charged it to idling
 */
const IDLE_SETTLE_MS = 3000;
/** the idle window's slices */
const IDLE_SLICE_MS = 1000;
/**
 * real SDK instances whose idle cost checks the model: at 100 their ~2 ms/s was within the hub's
 * jitter (fit 16 ± 33 µs/s each at load 12), so the bound said nothing
 */
const REAL_IDLE = 400;
/**
 * writes in flight at once in the steady-rate rows: one at a time, every write is a wake-up of the
 * hub of its own (a socket read, a write, the event loop's turn), which is Node's cost more than
 * the hub's; at a steady rate frames share the wake-ups
 */
const IN_FLIGHT = 8;

interface Step {
  idle: number;
  /** hub CPU ms per s, fleet idle: over the whole idle window */
  idleCpuMsPerS: number;
  /** the same, the median of its 1 s slices (what the idle rows use) */
  idleMedianMsPerS: Estimate;
  plain: number[];
  wrapped: number[];
  /** hub CPU µs per wrapped write, its idle CPU over as long taken off */
  hubUsPerWrite: number;
  /** the same with IN_FLIGHT wrapped writes in flight at once (no plain SETs between) */
  hubUsPerWriteInFlight: number;
  /** the bare ws echo server's CPU per frame, measured right after, the same fleet running */
  floor: { oneAtATime: number; inFlight: number };
  /** Applied frames the fleet sent per wrapped write (each instance, each write: the broadcast reached it) */
  appliedPerWrite: number;
}

/** ms of one awaited call */
async function timed(call: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await call();
  return performance.now() - t0;
}

/** `n` calls one at a time, each beside a plain SET of a fresh key (which goes first alternates): ms of each, and the span. */
async function alternating(
  plain: Redis,
  call: (i: number) => Promise<unknown>,
  plainKey: (i: number) => string,
  n: number,
): Promise<{ plain: number[]; calls: number[]; spanMs: number }> {
  const value = 'v'.repeat(64);
  const p: number[] = [];
  const c: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const plainSet = () => plain.set(plainKey(i), value);
    if (i % 2 === 0) {
      p.push(await timed(plainSet));
      c.push(await timed(() => call(i)));
    } else {
      c.push(await timed(() => call(i)));
      p.push(await timed(plainSet));
    }
  }
  return { plain: p, calls: c, spanMs: performance.now() - t0 };
}

/** `n` calls, `inFlight` at a time (each caller starts its next call when its last one settled). */
async function inFlight(call: (i: number) => Promise<unknown>, n: number, k: number): Promise<void> {
  let next = 0;
  const caller = async () => {
    while (next < n) await call(next++);
  };
  await Promise.all(Array.from({ length: k }, caller));
}

/** µs of `server` CPU per call while `run` makes `calls` calls, its idle CPU (ms per s) over as long taken off. */
async function cpuPerCall(
  server: ServerProcess,
  idleMsPerS: number,
  calls: number,
  run: () => Promise<unknown>,
): Promise<number> {
  const s0 = await server.stats();
  const t0 = performance.now();
  await run();
  const spanMs = performance.now() - t0;
  const s1 = await server.stats();
  return ((s1.cpuMs - s0.cpuMs - (idleMsPerS * spanMs) / 1000) * 1000) / calls;
}

/**
 * A WebSocket client of the bare echo server (ws-echo.ts): sends InvalidateRequest frames of the
 * size the wrapper sends for the same keys; each call settles on the next answer (one socket:
 * answers come in order).
 */
class EchoClient {
  readonly #ws: WebSocket;
  readonly #waiting: (() => void)[] = [];

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.on('message', () => this.#waiting.shift()?.());
  }

  static async open(url: string): Promise<EchoClient> {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    await within('the echo server', once(ws, 'open'), 10_000);
    return new EchoClient(ws);
  }

  call(key: string, id: number): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#waiting.push(resolve);
      this.#ws.send(encode({ t: MsgType.InvalidateRequest, id, key }));
    });
  }

  close(): void {
    this.#ws.terminate();
  }
}

/**
 * The floor under the hub's rows: a bare ws server (ws-echo.ts) in its own process, warmed as the
 * hub is, measured at each step beside the hub, with the same fleet running on the same cores:
 * its CPU per frame one at a time beside plain SETs, and IN_FLIGHT at a time.
 */
class EchoFloor {
  /** µs per frame over the first COLD_WRITES after its start */
  first = Number.NaN;

  private constructor(
    private readonly server: ServerProcess,
    private readonly client: EchoClient,
    private readonly plain: Redis,
  ) {}

  static async start(redisUrl: string, quick: boolean): Promise<EchoFloor> {
    const server = await startServer('echo');
    const plain = new Redis(redisUrl);
    try {
      const floor = new EchoFloor(server, await EchoClient.open(server.url), plain);
      await floor.#warm(quick);
      return floor;
    } catch (err) {
      plain.disconnect();
      await server.stop();
      throw err;
    }
  }

  /** Warm-up as the hub's, its first COLD_WRITES measured apart (its idle CPU, measured after, taken off). */
  async #warm(quick: boolean): Promise<void> {
    const cold = quick ? COLD_WRITES / 10 : COLD_WRITES;
    const call = (i: number) => this.client.call(`wc:echo:warm:${i}`, i);
    const s0 = await this.server.stats();
    const coldRun = await alternating(this.plain, call, (i) => `wc:echo:warm:${i}`, cold);
    const s1 = await this.server.stats();
    const warm = (quick ? WARM_WRITES / 10 : WARM_WRITES) - cold;
    await alternating(
      this.plain,
      (i) => call(cold + i),
      (i) => `wc:echo:warm:${cold + i}`,
      warm,
    );
    await delay(1000);
    const idle = (await hubIdleMsPerS(this.server, quick ? 2000 : 5000)).mean;
    this.first = ((s1.cpuMs - s0.cpuMs - (idle * coldRun.spanMs) / 1000) * 1000) / coldRun.calls.length;
  }

  /** Its CPU per frame now, one at a time and IN_FLIGHT at a time, its idle CPU over as long taken off. */
  async measure(tag: string, frames: number, idleMs: number): Promise<{ oneAtATime: number; inFlight: number }> {
    await this.server.gcHeap();
    const idle = (await hubIdleMsPerS(this.server, idleMs)).mean;
    const c = this.client;
    const oneAtATime = await cpuPerCall(this.server, idle, frames, () =>
      alternating(
        this.plain,
        (i) => c.call(`wc:echo:${tag}:${i}`, i),
        (i) => `wc:echo:${tag}:plain:${i}`,
        frames,
      ),
    );
    const k = await cpuPerCall(this.server, idle, frames, () =>
      inFlight((i) => c.call(`wc:echo:${tag}:inflight:${i}`, i), frames, IN_FLIGHT),
    );
    return { oneAtATime, inFlight: k };
  }

  async stop(): Promise<void> {
    this.client.close();
    this.plain.disconnect();
    await this.server.stop();
  }
}

/** The hub's CPU ms per s over the next `ms` in 1 s slices: over the whole window, and the median slice (with its standard error). */
async function hubIdleMsPerS(hub: ServerProcess, ms: number): Promise<{ mean: number; median: Estimate }> {
  const slices: number[] = [];
  const first = await hub.stats();
  const t0 = performance.now();
  let s0 = first;
  let at = t0;
  while (performance.now() - t0 < ms) {
    await delay(IDLE_SLICE_MS);
    const s1 = await hub.stats();
    const now = performance.now();
    slices.push(((s1.cpuMs - s0.cpuMs) * 1000) / (now - at));
    s0 = s1;
    at = now;
  }
  return { mean: ((s0.cpuMs - first.cpuMs) * 1000) / (at - t0), median: medianOf(slices) };
}

async function measureStep(
  hub: ServerProcess,
  fleet: SimFleet,
  plain: Redis,
  wrapped: Redis,
  opts: { idle: number; writes: number; idleMs: number },
): Promise<Omit<Step, 'floor'>> {
  // the fleet's Hellos moved the instance count: Config goes out to all, then things settle; the
  // garbage of connecting the fleet is collected now, not in the writes' span
  await delay(IDLE_SETTLE_MS);
  await hub.gcHeap();
  const idle = await hubIdleMsPerS(hub, opts.idleMs);
  const idleRate = idle.mean;
  const value = 'v'.repeat(64);
  const f0 = await fleet.stats();
  let run: Awaited<ReturnType<typeof alternating>> | undefined;
  const hubUsPerWrite = await cpuPerCall(hub, idleRate, opts.writes, async () => {
    run = await alternating(
      plain,
      (i) => wrapped.set(`wc:${opts.idle}:wrapped:${i}`, value),
      (i) => `wc:${opts.idle}:plain:${i}`,
      opts.writes,
    );
  });
  const f1 = await fleet.stats();
  const hubUsPerWriteInFlight = await cpuPerCall(hub, idleRate, opts.writes, () =>
    inFlight((i) => wrapped.set(`wc:${opts.idle}:inflight:${i}`, value), opts.writes, IN_FLIGHT),
  );
  return {
    idle: opts.idle,
    idleCpuMsPerS: idleRate,
    idleMedianMsPerS: idle.median,
    plain: run!.plain,
    wrapped: run!.calls,
    hubUsPerWrite,
    hubUsPerWriteInFlight,
    appliedPerWrite: (f1.applied - f0.applied) / opts.writes,
  };
}

async function writeSteps(quick: boolean): Promise<{
  steps: Step[];
  realIdle: { without: Estimate; withThem: Estimate };
  /** the bare ws echo server's CPU per frame over its first COLD_WRITES */
  echoCold: number;
  /** hub CPU µs per wrapped write over the first COLD_WRITES after its start (its idle CPU at 0 idle instances taken off) */
  coldHub: number;
}> {
  // fifteen 1 s slices (one hub ping period): the median ignores up to seven spikes
  const idleMs = quick ? 2000 : 15_000;
  const workers: Worker[] = [];
  const redis = await RedisServer.start();
  const hub = await startServer('hub');
  const hk = new HotKeyClient({ app: 'bench', hubs: hub.url });
  const plain = new Redis(redis.url);
  const wrapped = withHotKeys(new Redis(redis.url), hk);
  let echo: EchoFloor | undefined;
  try {
    await hk.ready({ signal: AbortSignal.timeout(10_000) });
    // the first ack comes one fence after the hub's start; the warm-up waits it out
    await within('the first acked write', wrapped.set('wc:warm', 'v'), START_FENCE_MS + 5000);
    const cold = quick ? COLD_WRITES / 10 : COLD_WRITES;
    const warm = (quick ? WARM_WRITES / 10 : WARM_WRITES) - cold;
    const c0 = await hub.stats();
    const coldRun = await alternating(
      plain,
      (i) => wrapped.set(`wc:warm:${i}`, 'v'),
      (i) => `wc:warm:${i}`,
      cold,
    );
    const c1 = await hub.stats();
    await alternating(
      plain,
      (i) => wrapped.set(`wc:warm:${cold + i}`, 'v'),
      (i) => `wc:warm:${cold + i}`,
      warm,
    );
    echo = await EchoFloor.start(redis.url, quick);
    const floorIdleMs = quick ? 2000 : 5000;
    const fleet = SimFleet.start(workers, GENERATORS);
    const steps: Step[] = [];
    for (const { idle, writes } of FLEET) {
      await fleet.grow(hub.url, idle, 60_000);
      fleet.leases(IDLE.leaseAskMs);
      fleet.pings(IDLE.pingMs);
      const n = quick ? Math.ceil(writes / 10) : writes;
      const step = await measureStep(hub, fleet, plain, wrapped, { idle, writes: n, idleMs });
      steps.push({ ...step, floor: await echo.measure(String(idle), n, floorIdleMs) });
    }
    for (const worker of workers.splice(0)) await worker.kill();
    const echoCold = echo.first;
    await echo.stop();
    echo = undefined;
    // real SDKs, idle past the first lease after their Welcome, against the hub without them just before
    await delay(IDLE_SETTLE_MS);
    const without = (await hubIdleMsPerS(hub, idleMs)).median;
    await connectSdkWorkers(workers, hub.url, REAL_IDLE, 'sdk', 60_000);
    await delay(DEFAULT_TUNABLES.leaseMs + IDLE_SETTLE_MS);
    const withThem = (await hubIdleMsPerS(hub, idleMs)).median;
    const coldHub =
      ((c1.cpuMs - c0.cpuMs - (steps[0]!.idleCpuMsPerS * coldRun.spanMs) / 1000) * 1000) / coldRun.calls.length;
    return { steps, realIdle: { without, withThem }, echoCold, coldHub };
  } finally {
    await echo?.stop();
    for (const worker of workers) await worker.kill();
    plain.disconnect();
    wrapped.disconnect();
    await hk.close();
    await hub.stop();
    await redis.stop();
  }
}

benchMain(async ({ quick }) => {
  const { steps, realIdle, echoCold, coldHub } = await writeSteps(quick);
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
      {
        bench,
        metric: `hub CPU per wrapped write, ${at}, ${IN_FLIGHT} writes in flight`,
        ours: s.hubUsPerWriteInFlight,
        unit: 'µs',
        better: 'lower',
        target: { reach: 100 },
        note: `${s.wrapped.length} writes, ${IN_FLIGHT} at a time, no plain SET between; hub CPU over the writes less its idle CPU over as long`,
      },
      {
        bench,
        metric: `bare ws echo server CPU per frame, one at a time, ${at} on the hub (the floor)`,
        ours: s.floor.oneAtATime,
        unit: 'µs',
        better: 'lower',
        note: `measured right after the hub's rows, the same fleet running: ${s.wrapped.length} frames of the wrapper's InvalidateRequest size alternating with plain SETs, each answered with an Ack-size frame and nothing else done; its idle CPU taken off`,
      },
      {
        bench,
        metric: `bare ws echo server CPU per frame, ${IN_FLIGHT} in flight, ${at} on the hub (the floor)`,
        ours: s.floor.inFlight,
        unit: 'µs',
        better: 'lower',
        note: `${s.wrapped.length} frames, ${IN_FLIGHT} at a time, as the in-flight wrapped writes`,
      },
    );
  }
  const coldN = quick ? COLD_WRITES / 10 : COLD_WRITES;
  rows.push(
    {
      bench,
      metric: `hub CPU per wrapped write, the first ${coldN.toLocaleString('en')} after the hub's start (cold), 0 idle instances`,
      ours: coldHub,
      unit: 'µs',
      better: 'lower',
      note: `V8 still optimising; then ${(WARM_WRITES - COLD_WRITES).toLocaleString('en')} more before the rows above; one at a time beside plain SETs; its idle CPU at 0 idle instances taken off`,
    },
    {
      bench,
      metric: `bare ws echo server CPU per frame, the first ${coldN.toLocaleString('en')} after its start (cold)`,
      ours: echoCold,
      unit: 'µs',
      better: 'lower',
      note: 'the same warm-up as the hub, the same way measured',
    },
  );
  // per idle instance: a difference of two rates, guarded (a fit within its noise is bounded, never negative)
  const perInstance = (withThem: Estimate, without: Estimate, n: number) =>
    guarded(scaled(minus(withThem, without), 1000 / n));
  for (const s of steps.slice(1)) {
    const cost = perInstance(s.idleMedianMsPerS, none.idleMedianMsPerS, s.idle);
    rows.push({
      bench,
      metric: `hub CPU per idle instance per second, ${s.idle.toLocaleString('en')} idle`,
      ours: cost.value,
      unit: 'µs/s',
      better: 'lower',
      target: { reach: 40 },
      note: `${describeCost(cost)}; hub idle ${s.idleMedianMsPerS.value.toFixed(2)} ms/s, ${none.idleMedianMsPerS.value.toFixed(2)} with none (median 1 s slice, ${IDLE_SETTLE_MS / 1000} s after the growth; window mean ${s.idleCpuMsPerS.toFixed(2)} and ${none.idleCpuMsPerS.toFixed(2)}); simulated: ${IDLE.leaseAskMs ? `a lease ask every ${IDLE.leaseAskMs} ms` : 'no lease ask (an idle SDK past its first lease)'}, a ping every ${IDLE.pingMs} ms`,
    });
  }
  const real = perInstance(realIdle.withThem, realIdle.without, REAL_IDLE);
  rows.push({
    bench,
    metric: `hub CPU per idle instance per second, ${REAL_IDLE} real SDK instances`,
    ours: real.value,
    unit: 'µs/s',
    better: 'lower',
    target: { reach: 40 },
    note: `${describeCost(real)}; hub idle ${realIdle.withThem.value.toFixed(2)} ms/s, ${realIdle.without.value.toFixed(2)} just before (median 1 s slice); HotKeyClients reading nothing, past their first lease`,
  });
  rows.push(...coldRows(bench, cold));
  return rows;
});
