/**
 * Benchmark 28 — versus: hotkey against what users would pick instead, in their terms (issue 36).
 * One service (node:http, versus-service.worker.ts) in 4 processes over the same redis-server and
 * the same traffic (versus-load.worker.ts: Zipf reads, a flash sale on one key with a large value,
 * writes from every instance), for each system of versus-systems.ts, each on a fresh stack
 * (versus-scenario.ts). Per system: the flash key's GETs at Redis (first 2 s of the surge, steady)
 * and all GETs; HTTP p50/p99 and errors before and during the surge; service CPU per request, RSS
 * and heap after GC per instance, Redis CPU and tracking items; stale reads after an acknowledged
 * write on another instance, calm, during a 2 s stall of the reader's invalidation path, across a
 * Redis restart and a hub or bus restart, and the writes acknowledged meanwhile.
 *
 * It writes docs/comparison.md and its SVG charts (versus-page.ts) from the run, unless --no-page,
 * and the run's figures beside them (comparison/run.json): `--from <run.json>` writes the page again
 * from those without running anything (after a change to the page's template). The full run keeps
 * well under 10 minutes on 2 cores; --quick is a smoke run (figures not meaningful, its page goes to a
 * temporary directory unless --page-dir says where).
 *
 *   pnpm bench --only versus [--quick]
 *   node --conditions=@hotkey/source --import tsx test/bench/versus.bench.ts [--quick]
 *     [--systems hotkey-ioredis,bentocache] [--faults stall,redis-restart,hub-restart] [--page-dir DIR] [--no-page]
 *   node --conditions=@hotkey/source --import tsx test/bench/versus.bench.ts --from docs/comparison/run.json
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchMain, type BenchRow } from './harness.ts';
import { freshBuild } from './node-redis-stack.ts';
import { describeMachine } from './report.ts';
import { FAULTS, runSystem, type Fault, type Plan, type Result } from './versus-scenario.ts';
import { LABEL, SYSTEMS, type SystemName } from './versus-systems.ts';
import { writePage, type Run } from './versus-page.ts';
import { versusRows } from './versus-rows.ts';

const BENCH = '28 versus';
const DOCS = fileURLToPath(new URL('../../docs/', import.meta.url));

/** The full run: each system on its own stack, one after the other. */
export const FULL: Plan = {
  processes: 4,
  zipfKeys: 10_000,
  zipfRate: 400,
  flashRate: 1600,
  tailRate: 400,
  writeRate: 20,
  flashBytes: 32 * 1024,
  // the surge's GETs of plain ioredis want about 4 % of a core of redis-server here: 3 % is short of it
  redisCpuPercent: 3,
  beforeMs: 4000,
  warmMs: 1500,
  surgeMs: 8000,
  bucketMs: 250,
  pairs: 50,
  afterPairs: 20,
  stallMs: 2000,
  downMs: 1000,
  recoverMs: 2000,
  faults: [...FAULTS],
  fromSource: false,
};

export const QUICK: Plan = {
  ...FULL,
  zipfRate: 200,
  flashRate: 600,
  tailRate: 300,
  redisCpuPercent: 1,
  beforeMs: 2000,
  warmMs: 1000,
  surgeMs: 3500,
  pairs: 15,
  afterPairs: 8,
};

function options() {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      systems: { type: 'string' },
      faults: { type: 'string' },
      'page-dir': { type: 'string' },
      'no-page': { type: 'boolean', default: false },
      from: { type: 'string' },
    },
  });
  const systems = (values.systems?.split(',') ?? [...SYSTEMS]) as SystemName[];
  for (const s of systems)
    if (!SYSTEMS.includes(s)) throw new TypeError(`--systems: unknown system ${s}; known: ${SYSTEMS.join(', ')}`);
  const faults = (values.faults?.split(',') ?? [...FAULTS]) as Fault[];
  for (const f of faults)
    if (!FAULTS.includes(f)) throw new TypeError(`--faults: unknown fault ${f}; known: ${FAULTS.join(', ')}`);
  return { systems, faults, pageDir: values['page-dir'], noPage: values['no-page'], from: values.from };
}

benchMain(async ({ quick }) => {
  const opts = options();
  if (opts.from) {
    const saved = JSON.parse(readFileSync(opts.from, 'utf8')) as { results: Result[]; run: Run };
    const dir = opts.pageDir ?? join(dirname(opts.from), '..');
    console.error(`# ${BENCH}: wrote ${writePage(dir, saved.results, saved.run).join(', ')}`);
    return versusRows(BENCH, saved.results, saved.run);
  }
  const plan = { ...(quick ? QUICK : FULL), faults: opts.faults };
  const build = plan.fromSource ? 'SDK and hub from source' : `${freshBuild('sdk')}, ${freshBuild('hub')}`;
  const loadStart = os.loadavg()[0]!;
  const loads: number[] = [];
  const results: Result[] = [];
  const failed = new Map<SystemName, string>();
  const started = performance.now();
  for (const system of opts.systems) {
    const t0 = performance.now();
    try {
      results.push(await runSystem(system, plan, (line) => console.error(`# ${BENCH}: ${system}: ${line}`)));
      console.error(`# ${BENCH}: ${system} ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    } catch (err) {
      const reason = String((err as Error)?.stack ?? err);
      console.error(`# ${BENCH}: ${system} failed: ${reason}`);
      failed.set(system, reason.split('\n')[0]!);
    }
    loads.push(os.loadavg()[0]!);
  }
  const machine = describeMachine(`pnpm bench --only versus${quick ? ' --quick' : ''}`, loadStart);
  const run: Run = {
    plan,
    quick,
    machine,
    loads,
    seconds: (performance.now() - started) / 1000,
    build,
    failed: [...failed].map(([s, why]) => `${LABEL[s]}: ${why}`),
  };
  if (!opts.noPage) {
    const dir = opts.pageDir ?? (quick ? mkdtempSync(join(os.tmpdir(), 'hotkey-versus-page-')) : DOCS);
    const written = writePage(dir, results, run);
    const json = join(dir, 'comparison', 'run.json');
    writeFileSync(json, `${JSON.stringify({ results, run })}\n`);
    console.error(`# ${BENCH}: wrote ${[...written, json].join(', ')}`);
  }
  const rows: BenchRow[] = versusRows(BENCH, results, run);
  for (const [s, why] of failed)
    rows.push({ bench: BENCH, metric: `all figures — ${s}`, ours: Number.NaN, unit: '', better: 'lower', note: why });
  return rows;
});
