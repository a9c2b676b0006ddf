/**
 * `pnpm bench`: runs every benchmark, each in its own process, prints one table and writes the
 * benchmarks page, docs/benchmarks.md with its charts (page.ts). A run of some benchmarks writes
 * its table to test/artifacts/bench-results.md (`--out`), and the page only with `--page`.
 *
 *   node --import tsx test/bench/run.ts [--quick] [--only ingest,latency,...] [--page] [--out FILE]
 *
 * `--only instructions` (opt-in: ~5 to 20 minutes under valgrind) counts the hot path in CPU
 * instructions per operation, a figure that other load on the machine does not move.
 *
 * --quick is a smoke run (seconds per benchmark, figures not meaningful). The full run stays under
 * about 10 minutes: each benchmark has a deadline and a broken one is reported, not fatal.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import os from 'node:os';
import { runBenchFile, type BenchRow } from './harness.ts';
import { describeMachine, markdownReport, textTable } from './report.ts';
import { benchmarksPage } from './page.ts';

interface BenchFile {
  name: string;
  file: string;
  /** deadline for the full run; --quick uses a third */
  timeoutMs: number;
  execArgv?: string[];
  /** run only when named by --only (slow: minutes under valgrind) */
  optIn?: boolean;
}

const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));

/** Roughly in the order of their numbers (each file's header: `Benchmark N`, the first column of docs/internals/benchmarks-history.md). */
const BENCHMARKS: BenchFile[] = [
  { name: 'ingest', file: here('./ingest.bench.ts'), timeoutMs: 150_000 },
  { name: 'latency', file: here('./latency.bench.ts'), timeoutMs: 150_000 },
  { name: 'fanout', file: here('./fanout.bench.ts'), timeoutMs: 180_000 },
  { name: 'hotpath', file: here('./hotpath.bench.ts'), timeoutMs: 60_000 },
  { name: 'instructions', file: here('./instructions.bench.ts'), timeoutMs: 1_800_000, optIn: true },
  { name: 'memory', file: here('./memory.bench.ts'), timeoutMs: 600_000, execArgv: ['--expose-gc'] },
  { name: 'accuracy', file: here('./accuracy.bench.ts'), timeoutMs: 120_000 },
  { name: 'modes', file: here('./modes.bench.ts'), timeoutMs: 300_000 },
  { name: 'cluster', file: here('./cluster.bench.ts'), timeoutMs: 120_000 },
  { name: 'handoff', file: here('./handoff.bench.ts'), timeoutMs: 300_000 },
  { name: 'scaleout', file: here('./scaleout.bench.ts'), timeoutMs: 180_000 },
  { name: 'tracking', file: here('./tracking.bench.ts'), timeoutMs: 120_000 },
  { name: 'waits', file: here('./reader-waits.bench.ts'), timeoutMs: 120_000 },
  { name: 'push', file: here('./push-loads.bench.ts'), timeoutMs: 180_000 },
  { name: 'push-wrapper', file: here('./push-wrapper.bench.ts'), timeoutMs: 120_000 },
  { name: 'replicas', file: here('./replicas.bench.ts'), timeoutMs: 120_000 },
  { name: 'connections', file: here('./connections.bench.ts'), timeoutMs: 600_000 },
  { name: 'detection', file: here('./detection.bench.ts'), timeoutMs: 300_000 },
  { name: 'fanout-write', file: here('./fanout-write.bench.ts'), timeoutMs: 180_000 },
  { name: 'write-hot', file: here('./write-hot.bench.ts'), timeoutMs: 180_000 },
  { name: 'ioredis-get', file: here('./ioredis-get.bench.ts'), timeoutMs: 120_000 },
  { name: 'node-redis-get', file: here('./node-redis-get.bench.ts'), timeoutMs: 120_000 },
  { name: 'multi-read', file: here('./multi-read.bench.ts'), timeoutMs: 120_000 },
  { name: 'flash-sale', file: here('./flash-sale.bench.ts'), timeoutMs: 120_000 },
  { name: 'eviction-flood', file: here('./eviction-flood.bench.ts'), timeoutMs: 120_000 },
  { name: 'node-redis', file: here('./node-redis.bench.ts'), timeoutMs: 1_200_000 },
  { name: 'rolling-restart', file: here('./rolling-restart.bench.ts'), timeoutMs: 180_000 },
  { name: 'writecost', file: here('./writecost.bench.ts'), timeoutMs: 600_000 },
  { name: 'cold-get', file: here('./cold-get.bench.ts'), timeoutMs: 180_000, optIn: true },
  { name: 'capacity', file: here('./capacity.bench.ts'), timeoutMs: 600_000 },
  { name: 'versus', file: here('./versus.bench.ts'), timeoutMs: 1_200_000 },
];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    out: { type: 'string', default: here('../artifacts/bench-results.md') },
    page: { type: 'boolean', default: false },
  },
});
const quick = values.quick;
const only = values.only?.split(',');
const selected = BENCHMARKS.filter((b) => (only ? only.includes(b.name) : !b.optIn));
if (selected.length === 0) {
  console.error(`no benchmark matches --only ${values.only}; known: ${BENCHMARKS.map((b) => b.name).join(', ')}`);
  process.exit(2);
}

const command = `pnpm bench${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}`;
const rows: BenchRow[] = [];
const errors: string[] = [];
const started = Date.now();
const loadStart = os.loadavg()[0]!;
for (const bench of selected) {
  const t0 = Date.now();
  process.stdout.write(`# ${bench.name} ...`);
  const result = await runBenchFile(bench.file, {
    quick,
    timeoutMs: quick ? Math.ceil(bench.timeoutMs / 3) : bench.timeoutMs,
    execArgv: bench.execArgv,
  });
  process.stdout.write(` ${((Date.now() - t0) / 1000).toFixed(1)} s${result.error ? ' FAILED' : ''}\n`);
  rows.push(...result.rows);
  if (result.error) {
    errors.push(`${bench.name}: ${result.error}`);
    console.error(result.error);
  }
}

const machine = describeMachine(command, loadStart);
console.log('');
console.log(textTable(rows));
console.log(
  `\n${machine.cpus} CPUs, ${machine.cpuModel}, ${machine.memoryGiB} GiB, Node ${machine.node}; load ${machine.loadStart.toFixed(1)} -> ${machine.loadEnd.toFixed(1)}; ${((Date.now() - started) / 1000).toFixed(0)} s`,
);
if (errors.length) console.log(`did not finish: ${errors.map((e) => e.split(':')[0]).join(', ')}`);
mkdirSync(dirname(values.out), { recursive: true });
writeFileSync(values.out, markdownReport(rows, machine, errors));
console.log(`wrote ${values.out}`);
// the page is one whole run: a smoke run never writes it, a partial one only when asked
if (!quick && (only === undefined || values.page)) {
  const notRun = BENCHMARKS.filter((b) => !selected.includes(b) && !b.optIn).map((b) => b.name);
  const page = benchmarksPage(rows, machine, errors, notRun);
  const docs = here('../../docs/');
  const chartsDir = `${docs}benchmarks`;
  mkdirSync(chartsDir, { recursive: true });
  for (const old of readdirSync(chartsDir)) if (old.endsWith('.svg')) rmSync(`${chartsDir}/${old}`);
  for (const [name, svg] of Object.entries(page.charts)) writeFileSync(`${chartsDir}/${name}`, svg);
  writeFileSync(`${docs}benchmarks.md`, page.markdown);
  console.log(`wrote ${docs}benchmarks.md`);
}
process.exitCode = errors.length ? 1 : 0;
