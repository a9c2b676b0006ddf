/**
 * The results table: formats benchmark rows for the terminal and as markdown, with the machine
 * they ran on (figures from a shared 2-core box mean little without it).
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { BenchRow } from './harness.ts';

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  date: string;
  command: string;
  /** 1-minute load average when the run started and ended: a busy shared box skews absolute figures */
  loadStart: number;
  loadEnd: number;
}

export function describeMachine(command: string, loadStart: number): Machine {
  let cpuModel = os.cpus()[0]?.model ?? 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m?.[1]) cpuModel = m[1].trim();
  } catch {
    // not Linux: os.cpus() is the best we have
  }
  return {
    cpus: os.availableParallelism(),
    cpuModel,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    date: new Date().toISOString(),
    command,
    loadStart,
    loadEnd: os.loadavg()[0]!,
  };
}

/** A figure with 3 significant digits and a k/M suffix for large ones. */
export function formatNumber(value: number | undefined): string {
  if (value === undefined) return '—';
  if (!Number.isFinite(value)) return 'n/a';
  const abs = Math.abs(value);
  if (abs >= 1e6) return `${(value / 1e6).toPrecision(3)}M`;
  if (abs >= 1e4) return `${(value / 1e3).toPrecision(3)}k`;
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 1) return value.toPrecision(3);
  if (abs === 0) return '0';
  return value.toPrecision(2);
}

/**
 * How many times better ours is than the baseline (> 1 is better for either direction), so that
 * a ratio reads the same way on every row.
 */
export function advantage(row: BenchRow): number | undefined {
  const { ours, baseline } = row;
  // a ratio of counts at or below zero (0 errors each, a heap that shrank) says nothing
  if (baseline === undefined || !Number.isFinite(baseline) || !Number.isFinite(ours) || ours <= 0 || baseline <= 0)
    return undefined;
  return row.better === 'higher' ? ours / baseline : baseline / ours;
}

function meets(row: BenchRow, level: number | undefined): boolean | undefined {
  if (level === undefined) return undefined;
  if (!Number.isFinite(row.ours)) return false;
  return row.better === 'higher' ? row.ours >= level : row.ours <= level;
}

/** 'aim' (aim met), 'yes' (reach met), 'NO', or '' without a target. */
export function verdict(row: BenchRow): string {
  const reach = meets(row, row.target?.reach);
  const aim = meets(row, row.target?.aim);
  if (aim === true && reach !== false) return 'aim';
  if (reach === true) return 'yes';
  if (reach === false) return 'NO';
  if (aim === false) return 'below aim';
  return '';
}

function targetText(row: BenchRow): string {
  const op = row.better === 'higher' ? '≥' : '≤';
  const parts: string[] = [];
  if (row.target?.reach !== undefined) parts.push(`${op} ${formatNumber(row.target.reach)}`);
  if (row.target?.aim !== undefined) parts.push(`aim ${op} ${formatNumber(row.target.aim)}`);
  return parts.join(', ');
}

const HEADERS = ['benchmark', 'metric', 'ours', 'baseline', 'ratio', 'target', 'met?', 'note'];

function cells(row: BenchRow): string[] {
  const ratio = advantage(row);
  return [
    row.bench,
    row.metric,
    `${formatNumber(row.ours)} ${row.unit}`,
    row.baseline === undefined ? '—' : `${formatNumber(row.baseline)} ${row.unit}`,
    ratio === undefined ? '—' : `${formatNumber(ratio)}×`,
    targetText(row),
    verdict(row),
    row.note ?? '',
  ];
}

/** Aligned plain-text table for the terminal. */
export function textTable(rows: BenchRow[]): string {
  const table = [HEADERS, ...rows.map(cells)];
  const widths = HEADERS.map((_, c) => Math.max(...table.map((r) => r[c]!.length)));
  return table
    .map((r) =>
      r
        .map((cell, c) => cell.padEnd(widths[c]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function markdownTable(rows: BenchRow[]): string {
  const escapePipes = (s: string) => s.replace(/\|/g, '\\|');
  const lines = [`| ${HEADERS.join(' | ')} |`, `|${HEADERS.map(() => ' --- ').join('|')}|`];
  for (const row of rows) lines.push(`| ${cells(row).map(escapePipes).join(' | ')} |`);
  return lines.join('\n');
}

export function markdownReport(rows: BenchRow[], machine: Machine, errors: string[]): string {
  const out = [
    '# hotkey benchmark results',
    '',
    `Command: \`${machine.command}\` — ${machine.date}`,
    '',
    `Machine: ${machine.cpus} CPUs (\`nproc\`), ${machine.cpuModel}, ${machine.memoryGiB} GiB RAM, Node ${machine.node}; ` +
      `load average ${machine.loadStart.toFixed(1)} at start, ${machine.loadEnd.toFixed(1)} at end (other work on the box skews absolute figures; ratios are within one run)`,
    '',
    'ratio: how many times better ours is than the naive baseline measured in the same run (> 1 is better, whichever way the unit goes).',
    'met?: `aim` = aim target met, `yes` = reach target met, `NO` = reach target missed.',
    '',
    markdownTable(rows),
    '',
  ];
  if (errors.length)
    out.push('## Benchmarks that did not finish', '', ...errors.map((e) => `- ${e.split('\n')[0]}`), '');
  return out.join('\n');
}
