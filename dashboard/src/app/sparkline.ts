/** samples (one a second) kept per hot key for the loads/s sparklines of the hot table and key detail */
export const LOAD_SPARK_POINTS = 60;

/** A QPS sparkline on a canvas: one path, no axes; the threshold as a faint line for scale. */
export function drawSparkline(
  canvas: HTMLCanvasElement,
  values: readonly number[],
  threshold: number,
  capacity: number,
): void {
  const dpr = globalThis.devicePixelRatio || 1;
  const w = canvas.clientWidth;
  const h = canvas.clientHeight;
  if (w === 0 || h === 0) return;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext('2d');
  if (!ctx) return;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  if (values.length === 0) return;
  let max = threshold;
  for (const v of values) if (v > max) max = v;
  const y = (v: number) => h - 1 - (v / (max || 1)) * (h - 3);
  // samples are right-aligned so that a young row grows from the right edge like the others
  const step = w / Math.max(1, capacity - 1);
  const x0 = w - (values.length - 1) * step;
  ctx.strokeStyle = 'rgba(255, 200, 80, 0.35)';
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(0, Math.round(y(threshold)) + 0.5);
  ctx.lineTo(w, Math.round(y(threshold)) + 0.5);
  ctx.stroke();
  ctx.strokeStyle = '#ff7a45';
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  values.forEach((v, i) => (i === 0 ? ctx.moveTo(x0 + i * step, y(v)) : ctx.lineTo(x0 + i * step, y(v))));
  ctx.stroke();
}
