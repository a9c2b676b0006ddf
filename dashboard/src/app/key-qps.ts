/**
 * The key detail chart's data: the QPS history the owner hub kept for the key (GET
 * /api/apps/:app/keys/qps), then the samples this page took since. Pure, tested in Node.
 */

/** what the chart shows: the last 5 minutes, as much as the hub keeps */
export const CHART_SPAN_MS = 5 * 60_000;

export interface QpsHistory {
  /** id of the hub that kept it (the key's owner) */
  hub: string;
  stepMs: number;
  /** ms since epoch, oldest first */
  times: number[];
  values: number[];
}

/** Reads the API's answer, skipping malformed points; throws TypeError when it is no history at all. */
export function parseQpsHistory(body: unknown): QpsHistory {
  const b = body as { hub?: unknown; stepMs?: unknown; points?: unknown } | null;
  if (typeof b !== 'object' || b === null || !Array.isArray(b.points))
    throw new TypeError('the hub answered without a QPS history');
  const times: number[] = [];
  const values: number[] = [];
  let last = -Infinity;
  for (const p of b.points as unknown[]) {
    if (!Array.isArray(p)) continue;
    const [t, q] = p as unknown[];
    if (typeof t !== 'number' || typeof q !== 'number' || !Number.isFinite(t) || !Number.isFinite(q) || t <= last)
      continue;
    last = t;
    times.push(t);
    values.push(Math.max(0, q));
  }
  return {
    hub: typeof b.hub === 'string' ? b.hub : '',
    stepMs: typeof b.stepMs === 'number' ? b.stepMs : 1000,
    times,
    values,
  };
}

/**
 * The hub's points, then the page's own samples taken after the last of them (the page samples
 * the live feed each second), all from `since` on. Inputs oldest first; the output too.
 */
export function mergeQps(
  history: QpsHistory | undefined,
  liveTimes: readonly number[],
  liveValues: readonly number[],
  since: number,
): { times: number[]; values: number[] } {
  const times: number[] = [];
  const values: number[] = [];
  let last = -Infinity;
  if (history) {
    for (let i = 0; i < history.times.length; i++) {
      const t = history.times[i]!;
      if (t < since) continue;
      times.push(t);
      values.push(history.values[i]!);
      last = t;
    }
    // a sample the page took before the hub's last point is already covered by the hub's
    if (history.times.length > 0) last = Math.max(last, history.times[history.times.length - 1]!);
  }
  for (let i = 0; i < liveTimes.length; i++) {
    const t = liveTimes[i]!;
    if (t <= last || t < since) continue;
    times.push(t);
    values.push(liveValues[i]!);
    last = t;
  }
  return { times, values };
}
