/**
 * The unit costs of the capacity model (capacity-model.ts), measured on one hub process by the
 * capacity bench. Each is the hub's CPU time over a phase that does the work, less its CPU at rest
 * over as long, measured in slices or rounds so that each comes with a standard error: a cost
 * that does not clear its noise is reported as such and bounded from above (estimate.ts), never
 * used as a negative number.
 *
 * Per holder costs are measured on the work itself, with enough of it to dominate the noise:
 * protocol 3 sends an invalidation only to the sessions that registered the key (Hold), so a
 * round registers K fresh keys on every instance of the fleet and writes them (each write one
 * Drop per instance), and K other keys on one instance and writes those; the difference per
 * write over the holders between is the cost per holder — with instances that do not answer (the
 * Drop written: fan-out), then with instances that answer (plus their Applied). The
 * registrations' own cost is the hold phase's.
 */
import type { HotKeyClient } from '@hotkey/sdk';
import { delay } from '../support/wait.ts';
import { percentile } from './harness.ts';
import { guarded, meanOf, minus, scaled, type Cost, type Estimate } from './estimate.ts';
import type { ServerProcess } from './server-process.ts';
import type { SimFleet } from './sim-fleet.ts';
import type { UnitCosts } from './capacity-model.ts';

/** What a calibration works with. */
export interface Rig {
  quick: boolean;
  hub: ServerProcess;
  hk: HotKeyClient;
  fleet: SimFleet;
  phaseMs: number;
}

/** slices of a rate phase */
const SLICE_MS = 500;
/** fresh keys each instance registers per round of the holder phases (fleet × this ≤ the hub's per-address share, 16,384) */
export const HOLD_KEYS = 10;

let keySeq = 0;
/** a key no instance has registered or written */
export const freshKey = (tag: string) => `cap:${tag}:${++keySeq}`;

/** The hub's CPU µs/s over the next `ms`, one sample per slice. */
export async function hubRate(hub: ServerProcess, ms: number): Promise<Estimate> {
  const samples: number[] = [];
  const t0 = performance.now();
  let s0 = await hub.stats();
  let at = performance.now();
  while (performance.now() - t0 < ms) {
    await delay(SLICE_MS);
    const s1 = await hub.stats();
    const now = performance.now();
    samples.push(((s1.cpuMs - s0.cpuMs) * 1e6) / (now - at));
    s0 = s1;
    at = now;
  }
  return meanOf(samples);
}

/** Hub CPU µs spent on `work` beyond `restUsPerS` over its span, and the span (ms). */
export async function hubCpuOf(r: Rig, restUsPerS: number, work: () => Promise<unknown>) {
  const s0 = await r.hub.stats();
  const t0 = performance.now();
  await work();
  const spanMs = performance.now() - t0;
  const s1 = await r.hub.stats();
  return { us: (s1.cpuMs - s0.cpuMs) * 1000 - (restUsPerS * spanMs) / 1000, spanMs };
}

/** `keys` invalidated one after the other: hub µs per write above `restUsPerS`, their latencies, Drops and Invalidates the fleet got per write. */
export async function awaitedWrites(r: Rig, keys: string[], restUsPerS: number) {
  const f0 = await r.fleet.stats();
  const ms: number[] = [];
  const { us } = await hubCpuOf(r, restUsPerS, async () => {
    for (const key of keys) {
      const w0 = performance.now();
      await r.hk.invalidate(key);
      ms.push(performance.now() - w0);
    }
  });
  const f1 = await r.fleet.stats();
  const n = keys.length;
  return {
    usPerWrite: us / n,
    ms,
    reached: (f1.drops - f0.drops + f1.invalidates - f0.invalidates) / n,
  };
}

/** Report traffic at `records` per frame, `perS` frames per instance per s: hub µs per frame above `rest`, frames/s, bytes per frame. */
async function reportCost(r: Rig, records: number, rest: Estimate, pool: number, perS = 1) {
  r.fleet.reports(1000 / perS, records, pool);
  await delay(1500);
  const f0 = await r.fleet.stats();
  const t0 = performance.now();
  const us = await hubRate(r.hub, r.phaseMs);
  const f1 = await r.fleet.stats();
  const rate = ((f1.reports - f0.reports) * 1000) / (performance.now() - t0);
  r.fleet.reports(0, 0, 1);
  await delay(500);
  const frames = f1.reports - f0.reports;
  return {
    perFrame: scaled(minus(us, rest), 1 / rate),
    rate,
    bytesPerFrame: (f1.reportBytes - f0.reportBytes) / frames,
  };
}

/**
 * Per holder costs at the fleet's size: `rounds` rounds, each registering HOLD_KEYS fresh keys on
 * every instance (one Hold frame per key) and on one instance, and writing them; which comes
 * first alternates. Returns per-round samples: µs per registration, and the cost per holder of a
 * write (its Drop, plus the Applied when `answer`).
 */
async function holderRounds(r: Rig, rest: number, rounds: number, answer: boolean) {
  const n = r.fleet.size;
  const perRegistration: number[] = [];
  const perHolder: number[] = [];
  const reached: number[] = [];
  r.fleet.silent(!answer);
  for (let round = 0; round < rounds; round++) {
    const perWrite = new Map<number, number>();
    const sizes = round % 2 === 0 ? [n, 1] : [1, n];
    for (const holders of sizes) {
      const keys = Array.from({ length: HOLD_KEYS }, () => freshKey(`h${holders}`));
      let refused = 0;
      const held = await hubCpuOf(r, rest, async () => {
        refused = (await r.fleet.hold(keys, holders)).refused;
      });
      if (refused > 0)
        throw new Error(`${refused} registrations refused: the holder phases ask too many of one address`);
      if (holders === n) perRegistration.push(held.us / (n * HOLD_KEYS));
      // the Applied of the last Drops, and the Held frames' tail, come in before the writes start
      await delay(200);
      const w = await awaitedWrites(r, keys, rest);
      perWrite.set(holders, w.usPerWrite);
      if (holders === n) reached.push(w.reached);
      await delay(200);
    }
    perHolder.push((perWrite.get(n)! - perWrite.get(1)!) / (n - 1));
  }
  r.fleet.silent(false);
  return { perRegistration, perHolder: meanOf(perHolder), reached: meanOf(reached).value };
}

/** The costs as the bench reports them: each guarded, with how it was measured. */
export interface Calibration {
  costs: UnitCosts;
  fits: {
    idle: Cost;
    lease: Cost;
    report: Cost;
    record: Cost;
    write: Cost;
    hold: Cost;
    fanout: Cost;
    applied: Cost;
  };
  /** sessions a write of a key the whole fleet registered reached (should be the fleet) */
  reached: number;
}

/**
 * Unit costs at the fleet's size (`rest`: the hub with no instance, `bare`: writes with none).
 * `leaseAskMs`: an SDK's lease period; `pool`: key names a generator's Reports cycle through.
 */
export async function calibrate(
  r: Rig,
  rest: Estimate,
  bare: { usPerWrite: Estimate; p50: number },
  opts: { leaseAskMs: number; pool: number; fastReports: number },
): Promise<Calibration> {
  const n = r.fleet.size;
  // the idle signal is a few ms/s against the hub's own jitter: twice as long as the other phases
  const idleAll = await hubRate(r.hub, 2 * r.phaseMs);
  r.fleet.leases(opts.leaseAskMs);
  await delay(1000);
  const leasedAll = await hubRate(r.hub, r.phaseMs);
  r.fleet.leases(0);
  // the hub's view of their leases runs out before the writes: no write waits on the fleet
  await delay(opts.leaseAskMs * 4 + 1000);
  const one = await reportCost(r, 1, idleAll, opts.pool);
  const many = await reportCost(r, 16, idleAll, opts.pool);
  const faster = await reportCost(r, 1, idleAll, opts.pool, opts.fastReports);
  const rounds = r.quick ? 2 : 6;
  const silent = await holderRounds(r, idleAll.value, rounds, false);
  const answered = await holderRounds(r, idleAll.value, rounds, true);
  const record = guarded(scaled(minus(many.perFrame, one.perFrame), 1000 / 15));
  const report = guarded(minus(one.perFrame, scaled({ ...record.fit }, 1 / 1000)));
  const fanout = guarded(silent.perHolder);
  const applied = guarded(minus(answered.perHolder, silent.perHolder));
  const hold = guarded(meanOf([...silent.perRegistration, ...answered.perRegistration]));
  const idle = guarded(scaled(minus(idleAll, rest), 1 / n));
  const lease = guarded(scaled(minus(leasedAll, idleAll), 1 / n));
  const write = guarded(bare.usPerWrite);
  // two rates, one line through them on log scales; kept within [0, 1] (0: a frame costs the same at any rate)
  const exponent = Math.log(one.perFrame.value / faster.perFrame.value) / Math.log(faster.rate / one.rate);
  const recordBytes = (many.bytesPerFrame - one.bytesPerFrame) / 15;
  return {
    costs: {
      baseUsPerS: Math.max(0, rest.value),
      idleUsPerS: idle.value,
      leaseUsPerS: lease.value,
      calibratedAt: n,
      reportUs: report.value,
      reportRate: one.rate,
      reportExponent: Number.isFinite(exponent) ? Math.min(1, Math.max(0, exponent)) : 0,
      rateSpan: faster.rate / one.rate,
      recordNs: record.value,
      reportBytes: one.bytesPerFrame - recordBytes,
      recordBytes,
      writeUs: write.value,
      holdUs: hold.value,
      fanoutUs: fanout.value,
      appliedUs: applied.value,
      writeMs: bare.p50,
    },
    fits: { idle, lease, report, record, write, hold, fanout, applied },
    reached: silent.reached,
  };
}

/** Writes with no instance connected: µs per write above `rest` (one sample per batch of 10) and their p50. */
export async function bareWrites(r: Rig, writes: number, rest: number): Promise<{ usPerWrite: Estimate; p50: number }> {
  const samples: number[] = [];
  const ms: number[] = [];
  for (let done = 0; done < writes; done += 10) {
    const w = await awaitedWrites(
      r,
      Array.from({ length: 10 }, () => freshKey('w')),
      rest,
    );
    samples.push(w.usPerWrite);
    ms.push(...w.ms);
  }
  return { usPerWrite: meanOf(samples), p50: percentile(ms, 50) };
}
