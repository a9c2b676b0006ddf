/**
 * Benchmark 29 — capacity: the model of docs/operations/capacity.md (capacity-model.ts) against runs. One
 * real hub in its own process; a writer (a real HotKeyClient calling `invalidate()` on fresh keys); simulated
 * instances (sim-sdk.worker.ts: a real WebSocket each, speaking the protocol, answering every
 * Invalidate with Applied, pinging as an idle SDK does) in two generator processes.
 *
 * 1. Unit costs, each from the hub's CPU time over a phase less what it spent just before without
 *    that work: with no instance, µs/s at rest and per write reaching nobody (and its latency);
 *    at 1,000 instances, µs/s per idle instance, per instance keeping a lease, per Report frame
 *    and per record (frames of 1 and of 16 records; and 8 frames a second, for how a frame's cost
 *    falls with the rate), bytes per frame and per record, and per
 *    holder of a write (sessions the invalidation was sent to, as the fleet counted them: all of
 *    them while the hub broadcasts, the key's holders once it directs) — written to silent
 *    instances (the fan-out alone) and to answering ones (plus their Applied).
 * 2. Runs at 100, 1,000 and 5,000 instances, a mixed load (every instance reports 4 keys a second,
 *    WRITES_PER_S invalidations a second): the hub's CPU and the writes' p50 latency, measured, and
 *    predicted from the unit costs with the audience the run measured. Within 30 % is the check.
 * 3. The model's answer for a large fleet (rows only, from the same costs): hubs needed and write
 *    latency for 100,000 instances, 1M keys, with broadcast and with directed invalidations.
 *
 *   pnpm bench --only capacity [--quick]
 */
import os from 'node:os';
import { HotKeyClient } from '@hotkey/sdk';
import { DEFAULT_TUNABLES } from '../../hub/src/core/tunables.ts';
import { delay, within } from '../support/wait.ts';
import { benchMain, percentile, type BenchRow, type Worker } from './harness.ts';
import { startServer, type ServerProcess } from './server-process.ts';
import { SimFleet } from './sim-fleet.ts';
import { hubLoad, writeLatencyMs, type UnitCosts, type Workload } from './capacity-model.ts';
import { exampleRows } from './capacity-examples.ts';

/** the fleet size the per-instance costs are measured at */
const CALIBRATE_AT = 1000;
/** fleet sizes the model is checked at */
const CHECK_AT = [100, 1000, 5000];
const GENERATORS = 2;
/**
 * The mixed load of the checks: a Report frame of 4 records per instance per second, and writes at
 * 4/s but at most DELIVERIES_PER_S invalidation frames a second to the fleet (while the hub
 * broadcasts, each write reaches every instance, and the two generator processes answer them all
 * on the same two cores as the hub)
 */
const MIXED = { reportEveryMs: 1000, records: 4, writesPerS: 4 };
const DELIVERIES_PER_S = 4000;
/** key names a generator process cycles through in its Reports (bounded: the hub keeps 100,000 windows per app) */
const POOL = 20_000;
/** an idle SDK's ping period, and its lease asks while it holds something (sdk options, hub tunables) */
const QUIET_PING_MS = 15_000;
const LEASE_ASK_MS = DEFAULT_TUNABLES.leaseMs / 4;
/** the hub acks nothing before one fence after its start */
const START_FENCE_MS = DEFAULT_TUNABLES.leaseMs * 1.125 + 500;
/** Report frames per instance per second of the second rate the frame cost is fitted on (the first: 1) */
const FAST_REPORTS = 8;
/** the error the model may make on a run and still pass */
const TOLERANCE = 0.3;

interface Run {
  quick: boolean;
  hub: ServerProcess;
  hk: HotKeyClient;
  fleet: SimFleet;
  phaseMs: number;
}

let keySeq = 0;

/** The hub's CPU µs per s over the next `ms`. */
async function hubUsPerS(hub: ServerProcess, ms: number): Promise<number> {
  const s0 = await hub.stats();
  const t0 = performance.now();
  await delay(ms);
  const s1 = await hub.stats();
  return ((s1.cpuMs - s0.cpuMs) * 1e6) / (performance.now() - t0);
}

/** `n` invalidations of fresh keys one after the other: hub µs per write above `restUsPerS`, latencies, sessions reached per write. */
async function awaitedWrites(r: Run, n: number, restUsPerS: number) {
  const f0 = await r.fleet.stats();
  const s0 = await r.hub.stats();
  const t0 = performance.now();
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const w0 = performance.now();
    await r.hk.invalidate(`cap:w:${++keySeq}`);
    ms.push(performance.now() - w0);
  }
  const spanS = (performance.now() - t0) / 1000;
  const s1 = await r.hub.stats();
  const f1 = await r.fleet.stats();
  return {
    usPerWrite: ((s1.cpuMs - s0.cpuMs) * 1000 - restUsPerS * spanS) / n,
    p50: percentile(ms, 50),
    reached: (f1.invalidates - f0.invalidates) / n,
  };
}

/** Report traffic at `records` per frame, `perS` frames per instance per s: hub µs per frame above `restUsPerS`, frames/s, bytes per frame. */
async function reportCost(r: Run, records: number, restUsPerS: number, perS = 1) {
  r.fleet.reports(1000 / perS, records, POOL);
  await delay(1500);
  const f0 = await r.fleet.stats();
  const t0 = performance.now();
  const us = await hubUsPerS(r.hub, r.phaseMs);
  const f1 = await r.fleet.stats();
  const rate = ((f1.reports - f0.reports) * 1000) / (performance.now() - t0);
  r.fleet.reports(0, 0, 1);
  const frames = f1.reports - f0.reports;
  return { usPerFrame: (us - restUsPerS) / rate, rate, bytesPerFrame: (f1.reportBytes - f0.reportBytes) / frames };
}

/** Unit costs at no instance (`rest`, writes) and at CALIBRATE_AT instances (the rest). */
async function calibrate(r: Run, rest: number, bare: { usPerWrite: number; p50: number }): Promise<UnitCosts> {
  const n = r.fleet.size;
  // the idle signal is a few ms/s against the hub's own jitter: twice as long as the other phases
  const idleAll = await hubUsPerS(r.hub, 2 * r.phaseMs);
  r.fleet.leases(LEASE_ASK_MS);
  await delay(1000);
  const leasedAll = await hubUsPerS(r.hub, r.phaseMs);
  r.fleet.leases(0);
  // the hub's view of their leases runs out before the writes: no write waits on the fleet
  await delay(DEFAULT_TUNABLES.leaseMs + 1000);
  const one = await reportCost(r, 1, idleAll);
  const many = await reportCost(r, 16, idleAll);
  const faster = await reportCost(r, 1, idleAll, FAST_REPORTS);
  const writes = r.quick ? 20 : 100;
  r.fleet.silent(true);
  const silent = await awaitedWrites(r, writes, idleAll);
  r.fleet.silent(false);
  await delay(300);
  const answered = await awaitedWrites(r, writes, idleAll);
  const fanoutUs = (silent.usPerWrite - bare.usPerWrite) / Math.max(1, silent.reached);
  const recordNs = ((many.usPerFrame - one.usPerFrame) / 15) * 1000;
  // two rates, one line through them on log scales; kept within [0, 1] (0: a frame costs the same at any rate)
  const exponent = Math.log(one.usPerFrame / faster.usPerFrame) / Math.log(faster.rate / one.rate);
  const recordBytes = (many.bytesPerFrame - one.bytesPerFrame) / 15;
  return {
    baseUsPerS: rest,
    idleUsPerS: (idleAll - rest) / n,
    leaseUsPerS: (leasedAll - idleAll) / n,
    calibratedAt: n,
    reportUs: one.usPerFrame - recordNs / 1000,
    reportRate: one.rate,
    reportExponent: Number.isFinite(exponent) ? Math.min(1, Math.max(0, exponent)) : 0,
    rateSpan: faster.rate / one.rate,
    recordNs,
    reportBytes: one.bytesPerFrame - recordBytes,
    recordBytes,
    writeUs: bare.usPerWrite,
    fanoutUs,
    appliedUs: (answered.usPerWrite - bare.usPerWrite) / Math.max(1, answered.reached) - fanoutUs,
    writeMs: bare.p50,
  };
}

/** A run of the mixed load: what the hub spent and what the writes took, with the load as it happened. */
interface Check {
  work: Workload;
  measuredUsPerS: number;
  measuredP50: number;
  writes: number;
  /** writes not acknowledged (HK_ERR_TIMEOUT) */
  failed: number;
  /** the hub's CPU with the fleet idle just before */
  idleUsPerS: number;
  /** the machine's load average (1 min) at the end of the run */
  load: number;
}

/** The mixed load at the fleet's size; the model's prediction is made afterwards, from this run's workload. */
async function mixedRun(r: Run): Promise<Check> {
  const n = r.fleet.size;
  const idleUsPerS = await hubUsPerS(r.hub, 2000);
  r.fleet.reports(MIXED.reportEveryMs, MIXED.records, POOL);
  await delay(1500);
  const f0 = await r.fleet.stats();
  const s0 = await r.hub.stats();
  const t0 = performance.now();
  const ms: number[] = [];
  const inFlight: Promise<void>[] = [];
  let failed = 0;
  const gapMs = 1000 / Math.min(MIXED.writesPerS, DELIVERIES_PER_S / Math.max(1, n));
  for (let i = 0; performance.now() - t0 < r.phaseMs; i++) {
    const w0 = performance.now();
    inFlight.push(
      r.hk.invalidate(`cap:m:${++keySeq}`).then(
        () => void ms.push(performance.now() - w0),
        () => void failed++,
      ),
    );
    await delay(Math.max(0, t0 + (i + 1) * gapMs - performance.now()));
  }
  const spanMs = performance.now() - t0;
  const s1 = await r.hub.stats();
  const f1 = await r.fleet.stats();
  r.fleet.reports(0, 0, 1);
  await within("the mixed run's writes", Promise.all(inFlight), 30_000);
  const writes = inFlight.length;
  return {
    work: {
      instances: n,
      leased: 0,
      reportsPerInstance: ((f1.reports - f0.reports) * 1000) / spanMs / Math.max(1, n),
      recordsPerReport: MIXED.records,
      writesPerS: (writes * 1000) / spanMs,
      holdersPerWrite: (f1.invalidates - f0.invalidates) / Math.max(1, writes),
      // the writer: while the hub broadcasts, it is a waiter of its own invalidation
      waitersPerWrite: f1.invalidates > f0.invalidates ? 1 : 0,
      broadcastsPerS: 0,
    },
    measuredUsPerS: ((s1.cpuMs - s0.cpuMs) * 1e6) / spanMs,
    measuredP50: percentile(ms, 50),
    writes,
    failed,
    idleUsPerS,
    load: os.loadavg()[0]!,
  };
}

async function measure(quick: boolean): Promise<{ costs: UnitCosts; checks: Check[]; seconds: number }> {
  const started = performance.now();
  const workers: Worker[] = [];
  const hub = await startServer('hub');
  const hk = new HotKeyClient({ app: 'bench', hubs: hub.url });
  hk.on('error', () => {});
  try {
    await hk.ready({ signal: AbortSignal.timeout(10_000) });
    await within('the first acked write', hk.invalidate('cap:warm'), START_FENCE_MS + 5000);
    const fleet = SimFleet.start(workers, GENERATORS);
    const r: Run = { quick, hub, hk, fleet, phaseMs: quick ? 1500 : 5000 };
    await delay(1000);
    const rest = await hubUsPerS(hub, 2 * r.phaseMs);
    const bare = await awaitedWrites(r, quick ? 30 : 200, rest);
    const checks: Check[] = [];
    let costs: UnitCosts | undefined;
    // the fleet only grows: each size in turn, the unit costs where the calibration size comes
    for (const size of [...new Set([...CHECK_AT, CALIBRATE_AT])].sort((a, b) => a - b)) {
      await fleet.grow(hub.url, size, 120_000);
      fleet.pings(QUIET_PING_MS);
      await delay(2000); // the Hellos moved the instance count: Config goes out to all, then it settles
      if (size === CALIBRATE_AT) costs = await calibrate(r, rest, bare);
      // the first run warms the hub's ingest and broadcast paths up (JIT), unmeasured
      if (checks.length === 0) await mixedRun({ ...r, phaseMs: 3000 });
      if (CHECK_AT.includes(size)) checks.push(await mixedRun(r));
    }
    return { costs: costs!, checks, seconds: (performance.now() - started) / 1000 };
  } finally {
    for (const worker of workers) await worker.kill();
    await hk.close();
    await hub.stop();
  }
}

const fmt = (x: number, digits = 1) => x.toFixed(digits);

function costRows(bench: string, c: UnitCosts): BenchRow[] {
  const row = (metric: string, ours: number, unit: string, note?: string): BenchRow => ({
    bench,
    metric,
    ours,
    unit,
    better: 'lower',
    ...(note && { note }),
  });
  return [
    row('unit cost: hub at rest', c.baseUsPerS, 'µs/s', 'no instance connected'),
    row(
      'unit cost: per idle instance',
      c.idleUsPerS,
      'µs/s',
      `measured at ${CALIBRATE_AT}, a ping every ${QUIET_PING_MS} ms`,
    ),
    row(
      'unit cost: per instance keeping a lease (more)',
      c.leaseUsPerS,
      'µs/s',
      `an ask every ${LEASE_ASK_MS} ms and its Grant`,
    ),
    row(
      'unit cost: per Report frame',
      c.reportUs,
      'µs',
      `at ${fmt(c.reportRate, 0)} frames/s, × (rate ÷ that)^−${fmt(c.reportExponent, 2)} at other rates (flat past ${fmt(c.rateSpan)}×); fitted on frames of 1 and 16 records and on ${FAST_REPORTS}× the rate, ${CALIBRATE_AT} instances`,
    ),
    row('unit cost: ingest per record', c.recordNs, 'ns'),
    row(
      'unit cost: bytes per Report frame + per record',
      c.reportBytes,
      'B',
      `+ ${fmt(c.recordBytes)} B per record (keys of ~12 characters)`,
    ),
    row('unit cost: per write reaching nobody', c.writeUs, 'µs', `p50 ${fmt(c.writeMs, 2)} ms, no instance connected`),
    row('unit cost: fan-out per socket', c.fanoutUs, 'µs', 'an invalidation written to silent instances'),
    row('unit cost: per holder Applied (more)', c.appliedUs, 'µs', 'per holder: fan-out + Applied'),
  ];
}

function checkRows(bench: string, c: UnitCosts, checks: Check[]): BenchRow[] {
  const rows: BenchRow[] = [];
  for (const k of checks) {
    const predicted = hubLoad(c, k.work, 1).usPerS;
    const p50 = writeLatencyMs(c, k.work, predicted);
    const at = `${k.work.instances.toLocaleString('en')} instances`;
    const err = (m: number, p: number) => `${fmt(((p - m) / m) * 100, 0)} %`;
    const idlePredicted = hubLoad(c, { ...k.work, reportsPerInstance: 0, writesPerS: 0 }, 1).usPerS;
    const idle = `idle ${fmt(k.idleUsPerS / 1000)} ms/s (model ${fmt(idlePredicted / 1000)})`;
    const conditions = `${idle}; ${fmt(k.work.reportsPerInstance, 2)} reports/s each of ${k.work.recordsPerReport} records, ${fmt(k.work.writesPerS)} writes/s reaching ${fmt(k.work.holdersPerWrite, 0)} sessions each (${k.writes} writes${k.failed ? `, ${k.failed} not acknowledged` : ''})`;
    rows.push(
      {
        bench,
        metric: `hub CPU, ${at}: measured (baseline: model)`,
        ours: k.measuredUsPerS / 1000,
        baseline: predicted / 1000,
        unit: 'ms/s',
        better: 'lower',
        note: `model off by ${err(k.measuredUsPerS, predicted)}${Math.abs(predicted - k.measuredUsPerS) <= TOLERANCE * k.measuredUsPerS ? '' : ' (over 30 %)'}; ${conditions}`,
      },
      {
        bench,
        metric: `write p50, ${at}: measured (baseline: model)`,
        ours: k.measuredP50,
        baseline: p50,
        unit: 'ms',
        better: 'lower',
        note: `model off by ${err(k.measuredP50, p50)}${
          Math.abs(p50 - k.measuredP50) <= TOLERANCE * k.measuredP50
            ? ''
            : ` (over 30 %: the run's p50 includes waiting for a core — load ${fmt(k.load)} on ${os.availableParallelism()} cores, the hub, the writer and the generators answering every invalidation among them — which the formula, for a hub with its core to itself, leaves out)`
        }`,
      },
    );
  }
  return rows;
}

benchMain(async ({ quick }) => {
  const bench = 'capacity';
  const { costs, checks, seconds } = await measure(quick);
  const rows = [...costRows(bench, costs), ...checkRows(bench, costs, checks), ...exampleRows(bench, costs)];
  rows.push({
    bench,
    metric: 'bench duration',
    ours: seconds,
    unit: 's',
    better: 'lower',
    note: `${GENERATORS} generator processes, up to ${Math.max(...CHECK_AT)} simulated instances`,
  });
  return rows;
});
