import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { BenchRow } from './harness.ts';
import { benchmarksPage } from './page.ts';
import type { Machine } from './report.ts';

const machine: Machine = {
  cpus: 2,
  cpuModel: 'Test CPU',
  memoryGiB: 24,
  node: 'v20.0.0',
  date: '2026-01-01T00:00:00.000Z',
  command: 'pnpm bench',
  loadStart: 1,
  loadEnd: 2,
};
const row = (bench: string, ours: number, baseline?: number, reach?: number): BenchRow => ({
  bench,
  metric: `${bench} metric`,
  ours,
  baseline,
  unit: 'ms',
  better: 'lower',
  target: reach === undefined ? undefined : { reach },
});

test('one run: the machine once, a table per benchmark, charts from its rows, what it left out named', () => {
  const rows = [row('1 ingest', 2, 8, 3), row('1 ingest', 5, 10, 4), row('2 latency', 100, 50)];
  const page = benchmarksPage(rows, machine, [], ['fanout']);
  assert.is(page.markdown.match(/Test CPU/g)?.length, 1);
  assert.ok(page.markdown.includes('## 1 ingest') && page.markdown.includes('## 2 latency'));
  assert.ok(page.markdown.includes('**Not in this run:** fanout'));
  assert.equal(Object.keys(page.charts).sort(), ['ratios.svg', 'targets.svg']);
  // ratios: medians 3× (4 and 2) and 0.5×; targets: ingest met 1, missed 1; latency has none
  assert.ok(page.charts['ratios.svg']!.includes('>3.00×<'), 'the median ratio is the bar label');
  assert.ok(page.charts['ratios.svg']!.includes('>0.50×<'));
  assert.not.ok(page.charts['targets.svg']!.includes('2 latency'), 'a benchmark without targets has no bars');
  for (const name of Object.keys(page.charts)) assert.ok(page.markdown.includes(`](benchmarks/${name})`));
});

test('a run without baselines or targets draws no chart, and names what did not finish', () => {
  const page = benchmarksPage([row('3 memory', 10)], machine, ['memory: timed out\nstack'], []);
  assert.equal(page.charts, {});
  assert.ok(page.markdown.includes('- memory: timed out'));
  assert.not.ok(page.markdown.includes('stack'));
  assert.not.ok(page.markdown.includes('Not in this run'));
});

test.run();
