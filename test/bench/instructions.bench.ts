/**
 * Benchmark 4b — SDK hot path in instructions per operation, counted by valgrind's callgrind
 * rather than timed: the count does not move with the load other work puts on a shared machine,
 * so a change to `get()` or `track()` can be compared with the previous commit's figure across
 * runs. Each operation runs twice under callgrind, N₁ and N₂ times; (I₂ − I₁) / (N₂ − N₁) is the
 * cost of one operation with start-up, JIT compilation and the scripted hub cancelled out.
 * Needs `valgrind` (Debian's package); without it the rows say so.
 */
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { benchMain, type BenchRow } from './harness.ts';

const WORKER = fileURLToPath(new URL('./instructions.worker.ts', import.meta.url));

/** Instructions callgrind counted in one run of the worker. */
function countInstructions(op: string, n: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'valgrind',
      [
        '--tool=callgrind',
        '--callgrind-out-file=/dev/null',
        process.execPath,
        // V8 compiles on the main thread: when optimised code arrives no longer depends on how
        // callgrind schedules compiler threads
        '--single-threaded',
        ...process.execArgv,
        WORKER,
        op,
        String(n),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => {
      const collected = /Collected : (\d+)/.exec(stderr)?.[1];
      if (code === 0 && collected) resolve(Number(collected));
      else reject(new Error(`callgrind run of ${op} × ${n} failed (exit ${code}): ${stderr.slice(-500)}`));
    });
  });
}

async function perOp(op: string, small: number, large: number): Promise<number> {
  const [a, b] = [await countInstructions(op, small), await countInstructions(op, large)];
  return (b - a) / (large - small);
}

benchMain(async ({ quick }) => {
  const bench = '4b hot path (callgrind)';
  if (spawnSync('valgrind', ['--version']).status !== 0) {
    return [
      {
        bench,
        metric: 'instructions per op',
        ours: NaN,
        unit: 'instr',
        better: 'lower',
        note: 'valgrind is not installed (apt-get install valgrind)',
      },
    ];
  }
  const [small, large] = quick ? [10_000, 210_000] : [100_000, 5_100_000];
  const mapGet = await perOp('map-get', small, large);
  const getHit = await perOp('get-hit', small, large);
  const trackCold = await perOp('track-cold', small, large);
  const rows: BenchRow[] = [
    {
      bench,
      metric: 'get() hit on a hot key',
      ours: getHit,
      unit: 'instr/op',
      better: 'lower',
      note: `(I at ${large} ops − I at ${small} ops) / ${large - small}`,
    },
    { bench, metric: 'track() on a cold key', ours: trackCold, unit: 'instr/op', better: 'lower' },
    { bench, metric: 'bare Map.get, same loop', ours: mapGet, unit: 'instr/op', better: 'lower' },
    { bench, metric: 'get() hit ÷ bare Map.get', ours: getHit / mapGet, unit: '×', better: 'lower' },
  ];
  return rows;
});
