/**
 * The versus benchmark's rows for the results table (docs/benchmarks.md): per system, each
 * figure beside plain ioredis's in the same run (the baseline column), and a target of 0 stale reads
 * for hotkey under every fault.
 */
import type { BenchRow } from './harness.ts';
import type { Plan, ProbeName, Result } from './versus-scenario.ts';

const MB = 1024 * 1024;
export const PROBES: ProbeName[] = [
  'calm',
  'stall',
  'after stall',
  'redis restart',
  'after redis restart',
  'hub/bus restart',
  'after hub/bus restart',
];

export const mean = (xs: number[]) => (xs.length ? xs.reduce((a, x) => a + x, 0) / xs.length : Number.NaN);

export function versusRows(bench: string, results: Result[], run: { plan: Plan; build: string }): BenchRow[] {
  const rows: BenchRow[] = [];
  const plain = results.find((r) => r.system === 'ioredis');
  const load = `${run.plan.flashRate}/s flash (${run.plan.flashBytes / 1024} KiB) + ${run.plan.zipfRate}/s Zipf + ${run.plan.writeRate} writes/s over ${run.plan.processes} services; ${run.build}`;
  for (const r of results) {
    const base = plain && r !== plain ? plain : undefined;
    const m = (metric: string) => `${metric} — ${r.system}`;
    const row = (metric: string, ours: number, baseline: number | undefined, unit: string, note?: string) =>
      rows.push({ bench, metric: m(metric), ours, baseline, unit, better: 'lower', note });
    row('flash key GETs at Redis, first 2 s of the surge', r.flashFirst2s, base?.flashFirst2s, 'GETs', load);
    row('flash key GETs at Redis, steady', r.flashSteadyPerSec, base?.flashSteadyPerSec, 'GETs/s');
    row('all GETs at Redis', r.counts.gets, base?.counts.gets, 'GETs', 'traffic start to the end of the surge window');
    row(
      'HTTP read p99 during the surge',
      r.surge.reads.p99,
      base?.surge.reads.p99,
      'ms',
      `p50 ${r.surge.reads.p50.toFixed(1)} ms; before the surge p50 ${r.before.reads.p50.toFixed(1)} / p99 ${r.before.reads.p99.toFixed(1)} ms; ${r.surge.reads.errors} read errors of ${r.surge.reads.n}`,
    );
    row(
      'HTTP write p99 during the surge',
      r.surge.writes.p99,
      base?.surge.writes.p99,
      'ms',
      `p50 ${r.surge.writes.p50.toFixed(1)} ms; ${r.surge.writes.errors} write errors of ${r.surge.writes.n}`,
    );
    rows.push({
      bench,
      metric: m('HTTP errors before and during the surge'),
      ours: r.before.reads.errors + r.before.writes.errors + r.surge.reads.errors + r.surge.writes.errors,
      unit: 'errors',
      better: 'lower',
      target: { reach: 0 },
      note: r.surge.firstError ?? r.before.firstError,
    });
    for (const p of PROBES) {
      const probe = r.probes[p];
      if (!probe) continue;
      // hotkey's rule covers writes it confirmed: one that resolved unconfirmed was reported to onInvalidateError
      const hot = r.system.startsWith('hotkey');
      rows.push({
        bench,
        metric: m(`stale reads after an acknowledged write on another instance: ${p}`),
        ours: probe.stale,
        unit: 'stale reads',
        better: 'lower',
        target: hot && probe.unconfirmed === 0 ? { reach: 0 } : undefined,
        note: `of ${probe.reads} reads; ${probe.acked} writes acknowledged${probe.writeErrors + probe.readErrors ? `; ${probe.writeErrors} write and ${probe.readErrors} read errors` : ''}`,
      });
      if (probe.unconfirmed > 0)
        rows.push({
          bench,
          metric: m(`stale reads after a write the system confirmed: ${p}`),
          ours: probe.staleConfirmed,
          unit: 'stale reads',
          better: 'lower',
          target: hot ? { reach: 0 } : undefined,
          note: `${probe.unconfirmed} of ${probe.acked} writes resolved unconfirmed (onInvalidateError)`,
        });
    }
    if (r.crashes.length)
      rows.push({
        bench,
        metric: m('service processes that exited'),
        ours: r.crashes.length,
        unit: 'processes',
        better: 'lower',
        target: { reach: 0 },
        note: r.crashes.join('; '),
      });
    row(
      'service CPU per request, surge',
      r.cpuPerRequest.surge,
      base?.cpuPerRequest.surge,
      'µs',
      `before the surge ${r.cpuPerRequest.before.toFixed(0)} µs (baseline ${base?.cpuPerRequest.before.toFixed(0) ?? '—'} µs)`,
    );
    row(
      'heap after GC per instance',
      mean(r.heap) / MB,
      base ? mean(base.heap) / MB : undefined,
      'MB',
      `RSS ${(mean(r.rss) / MB).toFixed(0)} MB`,
    );
    row(
      'Redis CPU during the surge',
      r.redisCpuPerSec,
      base?.redisCpuPerSec,
      'ms/s',
      `${r.trackingItems} tracking items`,
    );
  }
  return rows;
}
