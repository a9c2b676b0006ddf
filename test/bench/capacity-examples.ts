/**
 * The capacity model's answer for the fleets docs/operations/capacity.md works through, from the unit costs
 * of this run: hubs needed, one hub's CPU and a write's latency, with invalidations broadcast to
 * every session and directed to a key's holders.
 */
import { DEFAULT_TUNABLES } from '../../hub/src/core/tunables.ts';
import type { BenchRow } from './harness.ts';
import { hubLoad, hubsNeeded, writeLatencyMs, type UnitCosts, type Workload } from './capacity-model.ts';

/** a hub is sized to run at most this share of one core (headroom for bursts and failover) */
export const UTILISATION = 0.5;
/** more hubs than this is no answer: every instance keeps a socket to each */
export const MAX_HUBS = 64;

export interface Fleet {
  name: string;
  instances: number;
  writesPerS: number;
  hotKeys: number;
}

/** The page's worked examples. */
export const FLEETS: Fleet[] = [
  {
    name: '10,000 instances, 1M keys, 500 writes/s, 1,000 hot keys',
    instances: 10_000,
    writesPerS: 500,
    hotKeys: 1000,
  },
  {
    name: '100,000 instances, 1M keys, 1,000 writes/s, 1,000 hot keys',
    instances: 100_000,
    writesPerS: 1000,
    hotKeys: 1000,
  },
];

/**
 * What such a fleet does, in the page's assumptions: every instance serves hot keys (so keeps its
 * leases), flushes 2 Reports a second of 8 records (its keys over their per-instance threshold);
 * a hot key is promoted and later demoted once per 10 minutes; 1 % of writes hit hot keys (read-hot keys
 * are seldom written; a write-hot key is coalesced, not cached). Broadcast:
 * every session hears every invalidation and the Ack waits for all; directed: a cold key's write
 * reaches its 2 registered holders, a hot key's every session.
 */
export function workloadOf(f: Fleet, directed: boolean): Workload {
  const hotShare = 0.01;
  const holders = directed ? hotShare * f.instances + (1 - hotShare) * 2 : f.instances;
  return {
    instances: f.instances,
    leased: f.instances,
    reportsPerInstance: 2,
    recordsPerReport: 8,
    writesPerS: f.writesPerS,
    holdersPerWrite: holders,
    registrationsPerWrite: directed ? (1 - hotShare) * 2 : 0,
    waitersPerWrite: holders,
    broadcastsPerS: (2 * f.hotKeys) / 600,
  };
}

export function exampleRows(bench: string, c: UnitCosts): BenchRow[] {
  const rows: BenchRow[] = [];
  for (const f of FLEETS) {
    for (const directed of [false, true]) {
      const w = workloadOf(f, directed);
      const hubs = hubsNeeded(c, w, UTILISATION, MAX_HUBS);
      const at = Number.isFinite(hubs) ? hubs : MAX_HUBS;
      const load = hubLoad(c, w, at);
      const overCap = f.instances > DEFAULT_TUNABLES.maxSessionsPerApp;
      rows.push({
        bench,
        metric: `model: hubs for ${f.name}, invalidations ${directed ? 'directed to holders' : 'broadcast'}`,
        ours: hubs,
        unit: 'hubs',
        better: 'lower',
        note:
          `${Number.isFinite(hubs) ? '' : `none of up to ${MAX_HUBS} suffices; at ${MAX_HUBS} hubs `}` +
          `${(load.usPerS / 1000).toFixed(0)} ms/s per hub (${(load.perConnection / 1000).toFixed(0)} for connections), ` +
          `write p50 ${writeLatencyMs(c, w, load.usPerS).toFixed(1)} ms, reports ${(load.reportBytesPerS / 1e3).toFixed(0)} kB/s per hub` +
          `${overCap ? `; over maxSessionsPerApp (${DEFAULT_TUNABLES.maxSessionsPerApp}) per hub: split the fleet into apps` : ''}`,
      });
    }
  }
  return rows;
}
