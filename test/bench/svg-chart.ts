/**
 * A tiny SVG writer for the benchmark pages: a line chart (series over time, linear or log scale,
 * with vertical markers) and a grouped bar chart. Plain SVG 1.1 text, no script and no external
 * resource, so a page renders it inline on any Markdown host. Missing values (NaN) leave a gap in a
 * line and a dash in place of a bar.
 */

export interface Series {
  name: string;
  /** one value per x (line chart) or per group (bar chart); NaN where there is none */
  values: number[];
}

const PALETTE = ['#1b9e77', '#d95f02', '#7570b3', '#e7298a', '#66a61e', '#e6ab02', '#a6761d', '#666666'];
const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const fmt = (v: number) =>
  Math.abs(v) >= 1000
    ? `${+(v / 1000).toPrecision(3)}k`
    : Math.abs(v) >= 10 || v === 0
      ? `${Math.round(v)}`
      : `${+v.toPrecision(2)}`;

/** 1, 2 or 5 times a power of ten, near `range / count`: the linear axis's tick step. */
function niceStep(range: number, count: number): number {
  const raw = range / Math.max(1, count);
  const pow = 10 ** Math.floor(Math.log10(raw));
  const m = raw / pow;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * pow;
}

interface Frame {
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

function open(f: Frame, title: string): string[] {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${f.width}" height="${f.height}" viewBox="0 0 ${f.width} ${f.height}" ${FONT} font-size="12">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${f.width}" height="${f.height}" fill="#ffffff"/>`,
    `<text x="${f.width / 2}" y="18" text-anchor="middle" font-size="14" font-weight="600">${escapeXml(title)}</text>`,
  ];
}

/** A legend under the plot, wrapped into rows. */
function legend(f: Frame, names: string[], y0: number): string[] {
  const out: string[] = [];
  let x = f.left;
  let y = y0;
  names.forEach((name, i) => {
    const w = 22 + name.length * 6.4;
    if (x + w > f.width - 10) {
      x = f.left;
      y += 16;
    }
    out.push(
      `<rect x="${x}" y="${y - 9}" width="12" height="10" fill="${PALETTE[i % PALETTE.length]}"/>`,
      `<text x="${x + 16}" y="${y}">${escapeXml(name)}</text>`,
    );
    x += w + 10;
  });
  return out;
}

const legendRows = (width: number, left: number, names: string[]) => {
  let rows = 1;
  let x = left;
  for (const name of names) {
    const w = 22 + name.length * 6.4;
    if (x + w > width - 10) {
      rows++;
      x = left;
    }
    x += w + 10;
  }
  return rows;
};

/** The chart's frame: `bottom` px under the plot for the x axis, plus one row per legend line. */
function frameFor(
  o: { width?: number; height?: number; series: Series[] },
  bottom: number,
): { f: Frame; rows: number; plotW: number; plotH: number } {
  const width = o.width ?? 760;
  const rows = legendRows(
    width,
    64,
    o.series.map((s) => s.name),
  );
  const height = (o.height ?? 320) + rows * 16;
  const f = { width, height, left: 64, right: 16, top: 30, bottom: bottom + rows * 16 };
  return { f, rows, plotW: f.width - f.left - f.right, plotH: f.height - f.top - f.bottom };
}

export interface LineChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  /** the x value of each point (shared by every series) */
  x: number[];
  series: Series[];
  /** log10 y axis from `yMin` (values below it are drawn at it) @default false */
  log?: boolean;
  yMin?: number;
  yMax?: number;
  /** vertical lines with a label, at x values */
  markers?: Array<{ x: number; label: string }>;
  width?: number;
  height?: number;
}

export function lineChart(o: LineChartOptions): string {
  const { f, rows, plotW, plotH } = frameFor(o, 44);
  const finite = o.series.flatMap((s) => s.values.filter(Number.isFinite));
  const xMin = Math.min(...o.x);
  const xMax = Math.max(...o.x);
  const sx = (x: number) => f.left + ((x - xMin) / Math.max(1e-9, xMax - xMin)) * plotW;
  let sy: (v: number) => number;
  const ticks: number[] = [];
  if (o.log) {
    const lo = Math.log10(o.yMin ?? 1);
    const hi = Math.log10(Math.max(o.yMax ?? 0, ...finite, 10 ** (lo + 1)));
    const top = Math.ceil(hi);
    sy = (v) => f.top + plotH - ((Math.log10(Math.max(v, 10 ** lo)) - lo) / (top - lo)) * plotH;
    for (let e = Math.ceil(lo); e <= top; e++) ticks.push(10 ** e);
  } else {
    const max = Math.max(o.yMax ?? 0, ...finite, 1);
    const step = niceStep(max, 5);
    const top = Math.ceil(max / step) * step;
    sy = (v) => f.top + plotH - (v / top) * plotH;
    for (let t = 0; t <= top + step / 2; t += step) ticks.push(t);
  }
  const out = open(f, o.title);
  for (const t of ticks)
    out.push(
      `<line x1="${f.left}" x2="${f.left + plotW}" y1="${sy(t).toFixed(1)}" y2="${sy(t).toFixed(1)}" stroke="#e5e5e5"/>`,
      `<text x="${f.left - 6}" y="${(sy(t) + 4).toFixed(1)}" text-anchor="end">${fmt(t)}</text>`,
    );
  const xStep = niceStep(xMax - xMin, 8);
  for (let t = Math.ceil(xMin / xStep) * xStep; t <= xMax + 1e-9; t += xStep)
    out.push(`<text x="${sx(t).toFixed(1)}" y="${f.top + plotH + 16}" text-anchor="middle">${fmt(t)}</text>`);
  out.push(
    `<rect x="${f.left}" y="${f.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`,
    `<text x="${f.left + plotW / 2}" y="${f.top + plotH + 32}" text-anchor="middle">${escapeXml(o.xLabel)}</text>`,
    `<text transform="translate(14 ${f.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(o.yLabel)}</text>`,
  );
  for (const m of o.markers ?? [])
    out.push(
      `<line x1="${sx(m.x).toFixed(1)}" x2="${sx(m.x).toFixed(1)}" y1="${f.top}" y2="${f.top + plotH}" stroke="#333" stroke-dasharray="4 3"/>`,
      `<text x="${(sx(m.x) + 4).toFixed(1)}" y="${f.top + 12}">${escapeXml(m.label)}</text>`,
    );
  o.series.forEach((s, i) => {
    let d = '';
    let pen = 'M';
    s.values.forEach((v, j) => {
      if (!Number.isFinite(v) || o.x[j] === undefined) {
        pen = 'M';
        return;
      }
      d += `${pen}${sx(o.x[j]!).toFixed(1)} ${sy(v).toFixed(1)} `;
      pen = 'L';
    });
    if (d)
      out.push(
        `<path d="${d.trim()}" fill="none" stroke="${PALETTE[i % PALETTE.length]}" stroke-width="1.8" stroke-linejoin="round"/>`,
      );
  });
  out.push(
    ...legend(
      f,
      o.series.map((s) => s.name),
      f.height - rows * 16 + 4,
    ),
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}

export interface BarChartOptions {
  title: string;
  yLabel: string;
  /** one group of bars per name (e.g. a fault), one bar per series in each (e.g. a system) */
  groups: string[];
  series: Series[];
  /** the value axis's top @default the largest value */
  yMax?: number;
  /** text over each bar @default the value */
  label?: (value: number, series: number, group: number) => string;
  width?: number;
  height?: number;
}

export function barChart(o: BarChartOptions): string {
  const { f, rows, plotW, plotH } = frameFor(o, 46);
  const max = Math.max(o.yMax ?? 0, ...o.series.flatMap((s) => s.values.filter(Number.isFinite)), 1);
  const step = niceStep(max, 5);
  const top = Math.ceil(max / step) * step;
  const sy = (v: number) => f.top + plotH - (Math.min(v, top) / top) * plotH;
  const out = open(f, o.title);
  for (let t = 0; t <= top + step / 2; t += step)
    out.push(
      `<line x1="${f.left}" x2="${f.left + plotW}" y1="${sy(t).toFixed(1)}" y2="${sy(t).toFixed(1)}" stroke="#e5e5e5"/>`,
      `<text x="${f.left - 6}" y="${(sy(t) + 4).toFixed(1)}" text-anchor="end">${fmt(t)}</text>`,
    );
  const groupW = plotW / o.groups.length;
  const barW = Math.max(3, (groupW * 0.8) / o.series.length);
  o.groups.forEach((g, gi) => {
    const x0 = f.left + gi * groupW + groupW * 0.1;
    o.series.forEach((s, si) => {
      const v = s.values[gi] ?? Number.NaN;
      const x = x0 + si * barW;
      const text = Number.isFinite(v) ? (o.label?.(v, si, gi) ?? fmt(v)) : '–';
      if (Number.isFinite(v))
        out.push(
          `<rect class="bar" x="${x.toFixed(1)}" y="${sy(v).toFixed(1)}" width="${(barW - 1).toFixed(1)}" height="${(f.top + plotH - sy(v)).toFixed(1)}" fill="${PALETTE[si % PALETTE.length]}"/>`,
        );
      const ty = Number.isFinite(v) ? sy(v) - 3 : f.top + plotH - 3;
      out.push(
        `<text x="${(x + barW / 2).toFixed(1)}" y="${ty.toFixed(1)}" text-anchor="middle" font-size="9" fill="#333">${escapeXml(text)}</text>`,
      );
    });
    out.push(
      `<text x="${(f.left + gi * groupW + groupW / 2).toFixed(1)}" y="${f.top + plotH + 16}" text-anchor="middle">${escapeXml(g)}</text>`,
    );
  });
  out.push(
    `<rect x="${f.left}" y="${f.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`,
    `<text transform="translate(14 ${f.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(o.yLabel)}</text>`,
    ...legend(
      f,
      o.series.map((s) => s.name),
      f.height - rows * 16 + 4,
    ),
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}
