import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  broadcastReachMs,
  hubLoad,
  hubsNeeded,
  writeLatencyMs,
  type UnitCosts,
  type Workload,
} from './capacity-model.ts';

const costs: UnitCosts = {
  baseUsPerS: 1000,
  idleUsPerS: 10,
  leaseUsPerS: 50,
  calibratedAt: 1000,
  reportUs: 20,
  reportRate: 1000,
  reportExponent: 0,
  rateSpan: 4,
  recordNs: 2000,
  reportBytes: 20,
  recordBytes: 15,
  writeUs: 100,
  holdUs: 7,
  fanoutUs: 10,
  appliedUs: 5,
  writeMs: 0.5,
};
const work: Workload = {
  instances: 1000,
  leased: 100,
  reportsPerInstance: 1,
  recordsPerReport: 1,
  writesPerS: 10,
  holdersPerWrite: 1000,
  registrationsPerWrite: 0,
  waitersPerWrite: 0,
  broadcastsPerS: 1,
};

test('one hub: every term as the page states it', () => {
  const load = hubLoad(costs, work, 1);
  // 1000 + 1000·10 + 100·50 | 1000·20 + 1000·2 | 10·(100 + 1000·15) | 1·1000·10
  assert.is(load.perConnection, 16_000);
  assert.is(load.perKey, 22_000 + 151_000 + 10_000);
  assert.is(load.reportFrames, 1000);
  assert.is(load.reportBytesPerS, 1000 * 20 + 1000 * 15);
});

test('more hubs divide the per-key work, never the per-connection work', () => {
  const one = hubLoad(costs, work, 1);
  const four = hubLoad(costs, work, 4);
  assert.is(four.perConnection, one.perConnection);
  assert.ok(Math.abs(four.perKey - one.perKey / 4) < 1e-6, 'one record per frame: frames divide too');
  const many = hubLoad(costs, { ...work, recordsPerReport: 8 }, 4);
  // a flush sends an owner one frame if any of its 8 records is that owner's
  assert.ok(Math.abs(many.reportFrames - 1000 * (1 - 0.75 ** 8)) < 1e-6);
});

test('a Report frame costs more when frames come slower (fewer share a wake-up)', () => {
  const amortised = { ...costs, reportExponent: 0.5 };
  const at = (n: number) =>
    hubLoad(amortised, { ...work, instances: n, leased: 0, writesPerS: 0, broadcastsPerS: 0 }, 1);
  // 1000 frames/s: the calibrated 20 µs; 100 frames/s: 20 · √10 µs each
  assert.ok(Math.abs(at(1000).perKey - 1000 * (20 + 2)) < 1e-6);
  assert.ok(Math.abs(at(100).perKey - 100 * (20 * Math.sqrt(10) + 2)) < 1e-6);
  // idle instances by the same law: 100 of them cost √10 times as much each as at 1000
  assert.ok(Math.abs(at(100).perConnection - (1000 + 100 * 10 * Math.sqrt(10))) < 1e-6);
  assert.ok(Math.abs(at(1000).perConnection - (1000 + 1000 * 10)) < 1e-6);
  // past the span the fit was measured over (4×), a frame costs what it did at its end
  assert.ok(Math.abs(at(16_000).perConnection - (1000 + 16_000 * 10 * 0.5)) < 1e-6);
});

test('a registered holder costs its registration once per write that reaches it', () => {
  const directed = { ...work, holdersPerWrite: 2, registrationsPerWrite: 2, broadcastsPerS: 0 };
  const none = hubLoad(costs, { ...directed, registrationsPerWrite: 0 }, 1);
  // 10 writes/s · 2 registrations · 7 µs
  assert.ok(Math.abs(hubLoad(costs, directed, 1).perKey - none.perKey - 10 * 2 * 7) < 1e-6);
  // the owner pays it: two hubs, half each
  assert.ok(
    Math.abs(
      hubLoad(costs, directed, 2).perKey - hubLoad(costs, { ...directed, registrationsPerWrite: 0 }, 2).perKey - 70,
    ) < 1e-6,
  );
});

test('hubs needed: the smallest that fits; none when connections alone do not', () => {
  const busy = { ...work, writesPerS: 100 }; // 100 · 15,100 µs = 1.51 cores of writes
  const h = hubsNeeded(costs, busy, 0.5);
  assert.ok(hubLoad(costs, busy, h).usPerS <= 500_000);
  assert.ok(hubLoad(costs, busy, h - 1).usPerS > 500_000);
  assert.is(hubsNeeded(costs, { ...work, instances: 100_000, leased: 100_000 }, 0.5), Number.POSITIVE_INFINITY);
});

test('a write waits for its fan-out, for waiters a round trip more, stretched by load', () => {
  const idle = writeLatencyMs(costs, work, 0);
  assert.is(idle, 0.5 + 10);
  const waited = writeLatencyMs(costs, { ...work, waitersPerWrite: 1 }, 0);
  assert.is(waited, 0.5 + 10 + 0.5 + 5, "one waiter: its Applied may come after every holder's");
  assert.is(writeLatencyMs(costs, work, 500_000), idle * 2);
  assert.is(broadcastReachMs(costs, 1000), 10);
});

test.run();
