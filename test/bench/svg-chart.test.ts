import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { barChart, escapeXml, lineChart } from './svg-chart.ts';

test('text is escaped: a series name cannot break the SVG', () => {
  assert.is(escapeXml('a < b & "c" > d'), 'a &lt; b &amp; &quot;c&quot; &gt; d');
  const svg = lineChart({
    title: 't',
    xLabel: 'x',
    yLabel: 'y',
    x: [0, 1],
    series: [{ name: '<x&y>', values: [1, 2] }],
  });
  assert.ok(svg.includes('&lt;x&amp;y&gt;'));
  assert.not.ok(svg.includes('<x&y>'));
});

test('a missing value leaves a gap in the line: two subpaths, none through the gap', () => {
  const svg = lineChart({
    title: 't',
    xLabel: 'x',
    yLabel: 'y',
    x: [0, 1, 2, 3, 4],
    series: [{ name: 's', values: [1, 2, Number.NaN, 4, 5] }],
  });
  const d = /<path d="([^"]+)"/.exec(svg)?.[1] ?? '';
  assert.is(d.match(/M/g)?.length, 2, d);
  assert.is(d.match(/L/g)?.length, 2, d);
});

test('a log axis draws values below its floor at the floor, and ticks at powers of ten', () => {
  const svg = lineChart({
    title: 't',
    xLabel: 'x',
    yLabel: 'y',
    x: [0, 1],
    series: [{ name: 's', values: [0, 1000] }],
    log: true,
    yMin: 1,
  });
  for (const tick of ['>1<', '>10<', '>100<', '>1k<']) assert.ok(svg.includes(tick), tick);
  const d = /<path d="([^"]+)"/.exec(svg)?.[1] ?? '';
  const ys = [...d.matchAll(/[ML][\d.]+ ([\d.]+)/g)].map((m) => Number(m[1]));
  assert.is(ys.length, 2);
  assert.ok(ys[0]! > ys[1]!, 'the floor is below the top');
});

test('a bar chart draws one bar per finite value, a dash for a missing one, labels as given', () => {
  const svg = barChart({
    title: 't',
    yLabel: 'y',
    groups: ['a', 'b'],
    series: [
      { name: 's1', values: [10, Number.NaN] },
      { name: 's2', values: [0, 50] },
    ],
    label: (v) => `${v}%`,
  });
  const bars = [...svg.matchAll(/<rect class="bar" [^>]*height="([\d.]+)"/g)].map((m) => Number(m[1]));
  assert.is(bars.length, 3);
  assert.is(bars[1], 0, 'a zero is a bar of no height');
  assert.ok(bars[2]! > bars[0]!, '50 is taller than 10');
  assert.ok(svg.includes('>–<'), 'a dash for the missing value');
  for (const text of ['>10%<', '>0%<', '>50%<']) assert.ok(svg.includes(text), text);
});

test.run();
