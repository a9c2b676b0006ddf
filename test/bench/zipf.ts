/**
 * Deterministic, seeded access traces for the benchmarks: a Zipf(s) background over N keys with
 * planted flash keys of known true rates, and an exact-count oracle to grade detection against.
 *
 * Zipf: P(rank k) ∝ 1 / k^s for k = 1..N, sampled by inverting a precomputed CDF (binary search,
 * exact for any s, O(N) memory: 8 MB at N = 1M). Real cache traces fit s ≈ 0.6–1.3 (Breslau et
 * al., "Web caching and Zipf-like distributions", 1999); the accuracy benchmark uses 0.9, 1.1, 1.3.
 *
 * Flash keys model the sudden hot key the system exists for: a key absent from the background,
 * accessed at an exact, evenly spaced rate within [startMs, endMs). Their true window counts are
 * known in advance, so the accuracy benchmark can plant keys just above and just below a threshold.
 */

// The sampler is the demo's (hub/src/demo/zipf.ts): one implementation serves the demo and the traces.
import { mulberry32, ZipfSampler } from '../../hub/src/demo/zipf.ts';
export { mulberry32, ZipfSampler };
export type { ZipfOptions } from '../../hub/src/demo/zipf.ts';

export interface FlashKey {
  key: string;
  /** accesses per second while active */
  rate: number;
  /** first access at this offset into the trace @default 0 */
  startMs?: number;
  /** no access at or after this offset @default trace duration */
  endMs?: number;
}

export interface TraceOptions {
  /** distinct background keys */
  keys: number;
  /** Zipf exponent of the background */
  s: number;
  /** background accesses per second (all keys together) */
  rate: number;
  durationMs: number;
  seed?: number;
  flash?: FlashKey[];
  /** background key i is named `${prefix}${i}` @default 'k:' */
  prefix?: string;
}

/**
 * A trace: `names[ids[i]]` was accessed at `times[i]` ms from the start, times ascending.
 * Keys are interned as ids so that a 10M-event trace costs 12 bytes per event, not a string each.
 */
export interface Trace {
  names: string[];
  ids: Uint32Array;
  times: Float64Array;
  durationMs: number;
}

/**
 * Generates a trace: background events evenly spaced at `rate` with Zipf keys, merged in time
 * order with each flash key's evenly spaced events. Background ranks map to names through a
 * seeded shuffle, so the hottest key is not always `k:0` (and not adjacent in any hash order).
 */
export function generateTrace(opts: TraceOptions): Trace {
  const seed = opts.seed ?? 1;
  const prefix = opts.prefix ?? 'k:';
  const sampler = new ZipfSampler({ n: opts.keys, s: opts.s, seed });
  const random = mulberry32(seed ^ 0x9e3779b9);
  const rankToId = new Uint32Array(opts.keys);
  for (let i = 0; i < opts.keys; i++) rankToId[i] = i;
  for (let i = opts.keys - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const t = rankToId[i]!;
    rankToId[i] = rankToId[j]!;
    rankToId[j] = t;
  }
  const names: string[] = new Array(opts.keys);
  for (let i = 0; i < opts.keys; i++) names[i] = `${prefix}${i}`;

  const flash = opts.flash ?? [];
  // per flash stream: next event time, step, end
  const streams = flash.map((f, i) => {
    if (!(f.rate > 0)) throw new TypeError(`flash key ${f.key}: rate must be > 0`);
    names.push(f.key);
    const start = f.startMs ?? 0;
    const end = Math.min(f.endMs ?? opts.durationMs, opts.durationMs);
    // event j at start + j * step, computed from j (summing steps drifts by an event)
    const events = Math.max(0, Math.ceil(((end - start) * f.rate) / 1000 - 1e-9));
    return { id: opts.keys + i, start, step: 1000 / f.rate, j: 0, events, next: events > 0 ? start : Infinity };
  });
  const backgroundStep = opts.rate > 0 ? 1000 / opts.rate : Infinity;
  let total = opts.rate > 0 ? Math.ceil(opts.durationMs / backgroundStep) : 0;
  for (const s of streams) total += s.events;
  const ids = new Uint32Array(total);
  const times = new Float64Array(total);

  let n = 0;
  let bgIndex = 0;
  for (;;) {
    let bestTime = bgIndex * backgroundStep;
    if (bestTime >= opts.durationMs) bestTime = Infinity;
    let best = -1;
    for (let i = 0; i < streams.length; i++) {
      const s = streams[i]!;
      if (s.next < bestTime) {
        bestTime = s.next;
        best = i;
      }
    }
    if (bestTime === Infinity || n >= total) break;
    if (best < 0) {
      ids[n] = rankToId[sampler.next()]!;
      bgIndex++;
    } else {
      const s = streams[best]!;
      ids[n] = s.id;
      s.j++;
      s.next = s.j < s.events ? s.start + s.j * s.step : Infinity;
    }
    times[n++] = bestTime;
  }
  return { names, ids: ids.subarray(0, n), times: times.subarray(0, n), durationMs: opts.durationMs };
}

/**
 * Exact counts of a trace: for each key, the largest number of its accesses inside any window of
 * `windowMs` (half-open, sliding over the event times). This is the ground truth a detector with
 * that window is graded against.
 */
export class ExactOracle {
  readonly windowMs: number;
  readonly #maxCount: Uint32Array;
  readonly names: readonly string[];

  constructor(trace: Trace, windowMs: number) {
    this.windowMs = windowMs;
    this.names = trace.names;
    const keys = trace.names.length;
    // bucket event times by key (counting sort by id), then two pointers per key
    const counts = new Uint32Array(keys + 1);
    for (let i = 0; i < trace.ids.length; i++) counts[trace.ids[i]! + 1]!++;
    for (let k = 0; k < keys; k++) counts[k + 1]! += counts[k]!;
    const offsets = counts.slice();
    const byKey = new Float64Array(trace.ids.length);
    for (let i = 0; i < trace.ids.length; i++) byKey[offsets[trace.ids[i]!]!++] = trace.times[i]!;
    const maxCount = new Uint32Array(keys);
    for (let k = 0; k < keys; k++) {
      const begin = counts[k]!;
      const end = counts[k + 1]!;
      let best = 0;
      let lo = begin;
      for (let hi = begin; hi < end; hi++) {
        while (byKey[hi]! - byKey[lo]! >= windowMs) lo++;
        if (hi - lo + 1 > best) best = hi - lo + 1;
      }
      maxCount[k] = best;
    }
    this.#maxCount = maxCount;
  }

  /** Most accesses of `key` within any window (0 for a key not in the trace). */
  maxWindowCount(key: string): number {
    const i = this.names.indexOf(key);
    return i < 0 ? 0 : this.#maxCount[i]!;
  }

  /** Keys whose max window count is >= `count`. */
  keysAtLeast(count: number): string[] {
    const out: string[] = [];
    for (let i = 0; i < this.#maxCount.length; i++) if (this.#maxCount[i]! >= count) out.push(this.names[i]!);
    return out;
  }

  /**
   * Grades a set of promoted keys against a threshold. Truly hot: max window count >= threshold.
   * The hard bounds: every key at >= 1.2 × threshold must be promoted (`missedClear`), no key at
   * <= 0.8 × threshold may be (`falseClear`); keys between are a grey zone for precision/recall.
   */
  grade(promoted: Iterable<string>, threshold: number): Grade {
    const index = new Map<string, number>();
    this.names.forEach((name, i) => index.set(name, i));
    const promotedSet = new Set(promoted);
    let truePositives = 0;
    let falseClear = 0;
    const falseClearKeys: string[] = [];
    const belowKeys: string[] = [];
    for (const key of promotedSet) {
      const i = index.get(key);
      const count = i === undefined ? 0 : this.#maxCount[i]!;
      if (count >= threshold) truePositives++;
      else if (belowKeys.length < 10) belowKeys.push(`${key}@${(count / threshold).toFixed(2)}T`);
      if (count <= 0.8 * threshold) {
        falseClear++;
        if (falseClearKeys.length < 10) falseClearKeys.push(key);
      }
    }
    let hot = 0;
    let missedClear = 0;
    const missedClearKeys: string[] = [];
    for (let i = 0; i < this.#maxCount.length; i++) {
      const count = this.#maxCount[i]!;
      if (count >= threshold) hot++;
      if (count >= 1.2 * threshold && !promotedSet.has(this.names[i]!)) {
        missedClear++;
        if (missedClearKeys.length < 10) missedClearKeys.push(this.names[i]!);
      }
    }
    return {
      promoted: promotedSet.size,
      hot,
      truePositives,
      precision: promotedSet.size ? truePositives / promotedSet.size : 1,
      recall: hot ? truePositives / hot : 1,
      missedClear,
      falseClear,
      missedClearKeys,
      falseClearKeys,
      belowKeys,
    };
  }
}

export interface Grade {
  promoted: number;
  /** keys truly at or over the threshold */
  hot: number;
  truePositives: number;
  precision: number;
  recall: number;
  /** keys at >= 1.2 × threshold that were not promoted (must be 0) */
  missedClear: number;
  /** promoted keys at <= 0.8 × threshold (must be 0) */
  falseClear: number;
  missedClearKeys: string[];
  falseClearKeys: string[];
  /** promoted keys below the threshold, as `key@0.93T` (at most 10) */
  belowKeys: string[];
}
