/**
 * The benchmarks page, docs/benchmarks.md, as `pnpm bench` writes it: the machine and the date
 * once, two headline charts drawn from the same run's rows (docs/benchmarks/*.svg), then one
 * table per benchmark. A run of some benchmarks only (`--only`) writes it only when asked
 * (`--page`), and the page then names the benchmarks it leaves out: a page is always one run.
 */
import type { BenchRow } from './harness.ts';
import { advantage, formatNumber, markdownTable, verdict, type Machine } from './report.ts';
import { barChart } from './svg-chart.ts';

export interface BenchmarksPage {
  markdown: string;
  /** file name under docs/benchmarks/ → SVG text */
  charts: Record<string, string>;
}

/** Rows grouped by benchmark, in the order they ran. */
function byBenchmark(rows: readonly BenchRow[]): Map<string, BenchRow[]> {
  const groups = new Map<string, BenchRow[]>();
  for (const row of rows) {
    const list = groups.get(row.bench) ?? [];
    list.push(row);
    groups.set(row.bench, list);
  }
  return groups;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Targets met and missed per benchmark (rows without a target left out). */
function targetsChart(groups: Map<string, BenchRow[]>): string | undefined {
  const names: string[] = [];
  const met: number[] = [];
  const missed: number[] = [];
  for (const [bench, rows] of groups) {
    const verdicts = rows.map(verdict).filter((v) => v !== '');
    if (verdicts.length === 0) continue;
    names.push(bench);
    met.push(verdicts.filter((v) => v === 'aim' || v === 'yes').length);
    missed.push(verdicts.filter((v) => v === 'NO' || v === 'below aim').length);
  }
  if (names.length === 0) return undefined;
  return barChart({
    title: 'Targets met and missed, per benchmark',
    yLabel: 'rows with a target',
    groups: names,
    series: [
      { name: 'met (reach or aim)', values: met },
      { name: 'missed (reach, or below aim)', values: missed },
    ],
    label: (v) => (v === 0 ? '' : String(v)),
    width: Math.max(760, names.length * 56),
  });
}

/** The median of each benchmark's ratios against its naive baseline, capped for the axis. */
function ratioChart(groups: Map<string, BenchRow[]>): string | undefined {
  const CAP = 20;
  const names: string[] = [];
  const ratios: number[] = [];
  for (const [bench, rows] of groups) {
    const r = rows.map(advantage).filter((x): x is number => x !== undefined);
    if (r.length === 0) continue;
    names.push(bench);
    ratios.push(median(r));
  }
  if (names.length === 0) return undefined;
  return barChart({
    title: `Ours against the naive baseline, same run: median ratio per benchmark (> 1 is better; axis capped at ${CAP}×)`,
    yLabel: 'times better',
    groups: names,
    series: [{ name: 'median ratio', values: ratios.map((r) => Math.min(r, CAP)) }],
    yMax: CAP,
    label: (_, __, g) => `${formatNumber(ratios[g])}×`,
    width: Math.max(760, names.length * 56),
  });
}

export function benchmarksPage(
  rows: readonly BenchRow[],
  machine: Machine,
  errors: readonly string[],
  notRun: readonly string[],
): BenchmarksPage {
  const groups = byBenchmark(rows);
  const charts: Record<string, string> = {};
  const targets = targetsChart(groups);
  const ratios = ratioChart(groups);
  if (ratios) charts['ratios.svg'] = ratios;
  if (targets) charts['targets.svg'] = targets;
  const out = [
    '# Benchmarks',
    '',
    'Written by `pnpm bench`; every figure on this page comes from the one run described here.',
    'The machines are shared and noisy, so each figure stands beside a naive baseline, or a peer,',
    'measured in the same run: read the ratios first.',
    '',
    `- **Run:** \`${machine.command}\`, ${machine.date}`,
    `- **Machine:** ${machine.cpus} CPUs (\`nproc\`), ${machine.cpuModel}, ${machine.memoryGiB} GiB RAM, Node ${machine.node}`,
    `- **Load average:** ${machine.loadStart.toFixed(1)} at the start, ${machine.loadEnd.toFixed(1)} at the end (other work on the box skews absolute figures, not ratios)`,
  ];
  if (notRun.length > 0) out.push(`- **Not in this run:** ${notRun.join(', ')} (\`pnpm bench --only NAME\`)`);
  out.push('');
  for (const name of Object.keys(charts)) out.push(`![${name.replace('.svg', '')}](benchmarks/${name})`, '');
  out.push(
    '**ratio**: how many times better ours is than the baseline in the same run (> 1 is better,',
    'whichever way the unit goes). **met?**: `aim` = the aim target met, `yes` = the reach target met,',
    '`NO` = the reach target missed.',
    '',
  );
  for (const [bench, list] of groups) out.push(`## ${bench}`, '', markdownTable(list), '');
  if (errors.length > 0)
    out.push('## Benchmarks that did not finish', '', ...errors.map((e) => `- ${e.split('\n')[0]}`), '');
  return { markdown: out.join('\n'), charts };
}
