/**
 * Recent cluster QPS of the hot keys this hub owns, for the dashboard's key detail chart: an
 * on-call engineer who opens a key during an incident sees the last minutes at once, not only what
 * the page sampled since it was opened.
 *
 * Design: every tracked key owns a slot of `steps` Float32 values in a slab (allocated
 * SLAB_KEYS keys at a time, slots reused), written at ring position `step % steps` where
 * `step = floor(now / stepMs)`. All tracked keys are sampled on the same step, so the sample time
 * and step number of each ring position are stored once, shared. A step the hub missed (a stall)
 * leaves its position holding an older step number and is skipped when read.
 *
 * Admission: hot keys are admitted hottest first into free slots; once `maxKeys` slots are in use,
 * a new hot key takes the slot of the cold key that stopped being hot longest ago, else that of the
 * coolest tracked hot key if it is hotter. A key that stops being hot keeps its slot and keeps
 * being sampled (its real, decaying QPS, from `coldQps`) for `retainMs`, so the detail page of a
 * just-demoted key still shows its curve.
 *
 * Memory: at most `maxKeys * steps * 4` bytes of values (defaults: 2000 × 300 × 4 B = 2.4 MB),
 * plus one Map entry and the key string per tracked key; nothing is allocated until a key is hot.
 *
 * Pure: no timers, no I/O; time comes in as `now` (ms).
 */

/**
 * @param [stepMs=1000] ms between samples
 * @param [steps=300] samples kept per key (5 minutes at the default step)
 * @param [maxKeys=2000] keys tracked at most (hot keys by QPS, then recently demoted ones)
 * @param [retainMs=steps*stepMs] how long a key that stopped being hot keeps its history
 */
export interface QpsHistoryOptions {
  stepMs?: number;
  steps?: number;
  maxKeys?: number;
  retainMs?: number;
}

/** One hot key at sampling time. */
export interface QpsSample {
  app: string;
  key: string;
  qps: number;
}

/** `[ms since epoch, qps]`, oldest first */
export type QpsPoint = [number, number];

interface Slot {
  index: number;
  app: string;
  key: string;
  /** first step written for this key (earlier values in the slot belong to a previous key) */
  first: number;
  /** step at which the key was last seen hot */
  hotStep: number;
  /** latest QPS written (for eviction of the coolest hot key) */
  qps: number;
}

const SLAB_KEYS = 64;
const NO_STEP = -1;

const idOf = (app: string, key: string) => `${app}\u0000${key}`;

export class QpsHistory {
  readonly stepMs: number;
  readonly steps: number;
  readonly maxKeys: number;
  readonly retainMs: number;
  readonly #slots = new Map<string, Slot>();
  readonly #free: number[] = [];
  readonly #slabs: Float32Array[] = [];
  /** step number held at each ring position (NO_STEP: never written) */
  readonly #stepAt: Float64Array;
  /** wall time of the sample at each ring position */
  readonly #timeAt: Float64Array;
  #lastStep = NO_STEP;
  #allocated = 0;

  constructor(options: QpsHistoryOptions = {}) {
    this.stepMs = Math.max(1, options.stepMs ?? 1000);
    this.steps = Math.max(2, Math.floor(options.steps ?? 300));
    this.maxKeys = Math.max(1, Math.floor(options.maxKeys ?? 2000));
    this.retainMs = Math.max(0, options.retainMs ?? this.steps * this.stepMs);
    this.#stepAt = new Float64Array(this.steps).fill(NO_STEP);
    this.#timeAt = new Float64Array(this.steps);
  }

  /** keys with a history now */
  get size(): number {
    return this.#slots.size;
  }

  /** True when `now` falls in a step not yet sampled (call `sample` then). */
  due(now: number): boolean {
    return Math.floor(now / this.stepMs) > this.#lastStep;
  }

  /**
   * Records one step: `hot` are the hot keys with their QPS (any order, each once); tracked keys
   * not among them are sampled through `coldQps` until `retainMs` after they were last hot. A
   * second call within the same step, or a clock that stepped back, is ignored.
   */
  sample(now: number, hot: readonly QpsSample[], coldQps: (app: string, key: string) => number): void {
    const step = Math.floor(now / this.stepMs);
    if (step <= this.#lastStep) return;
    this.#lastStep = step;
    const pos = step % this.steps;
    this.#stepAt[pos] = step;
    this.#timeAt[pos] = now;

    const fresh: QpsSample[] = [];
    for (const s of hot) {
      const slot = this.#slots.get(idOf(s.app, s.key));
      if (slot === undefined) {
        fresh.push(s);
        continue;
      }
      slot.hotStep = step;
      this.#write(slot, pos, s.qps);
    }
    const retainSteps = Math.ceil(this.retainMs / this.stepMs);
    for (const [id, slot] of this.#slots) {
      if (slot.hotStep === step) continue;
      if (step - slot.hotStep > retainSteps) {
        this.#release(id, slot);
        continue;
      }
      this.#write(slot, pos, coldQps(slot.app, slot.key));
    }
    if (fresh.length === 0) return;
    fresh.sort((a, b) => b.qps - a.qps);
    let victims: [string, Slot][] | undefined;
    let next = 0;
    for (const s of fresh) {
      let index = this.#allocate();
      if (index < 0) {
        // full: the key that stopped being hot longest ago goes first, then the coolest hot key;
        // sorted once per step, so admitting k keys costs O(n log n + k), not O(n * k)
        victims ??= [...this.#slots].sort(([, a], [, b]) => a.hotStep - b.hotStep || a.qps - b.qps);
        const victim = victims[next];
        // hottest first: once a key cannot win a slot, no later one can
        if (victim === undefined || (victim[1].hotStep === step && victim[1].qps >= s.qps)) break;
        next++;
        this.#slots.delete(victim[0]);
        index = victim[1].index;
      }
      const slot: Slot = { index, app: s.app, key: s.key, first: step, hotStep: step, qps: 0 };
      this.#slots.set(idOf(s.app, s.key), slot);
      this.#write(slot, pos, s.qps);
    }
  }

  /** The key's samples, oldest first, at most `steps` of them; empty when it has no history. */
  points(app: string, key: string): QpsPoint[] {
    const slot = this.#slots.get(idOf(app, key));
    if (slot === undefined) return [];
    const slab = this.#slabs[(slot.index / SLAB_KEYS) | 0]!;
    const base = (slot.index % SLAB_KEYS) * this.steps;
    const out: QpsPoint[] = [];
    for (let step = Math.max(slot.first, this.#lastStep - this.steps + 1); step <= this.#lastStep; step++) {
      const pos = step % this.steps;
      if (this.#stepAt[pos] !== step) continue; // no sample was taken in that step
      // Float32 keeps ~7 digits: round to what a chart can show, so 33.3 is not 33.33333206
      out.push([this.#timeAt[pos]!, Math.round(slab[base + pos]! * 100) / 100]);
    }
    return out;
  }

  #write(slot: Slot, pos: number, qps: number): void {
    const value = Number.isFinite(qps) && qps > 0 ? qps : 0;
    slot.qps = value;
    this.#slabs[(slot.index / SLAB_KEYS) | 0]![(slot.index % SLAB_KEYS) * this.steps + pos] = value;
  }

  #release(id: string, slot: Slot): void {
    this.#slots.delete(id);
    this.#free.push(slot.index);
  }

  /** A free slot index, or -1 when all `maxKeys` are in use. */
  #allocate(): number {
    const reused = this.#free.pop();
    if (reused !== undefined) return reused;
    if (this.#allocated >= this.maxKeys) return -1;
    const index = this.#allocated++;
    if (index >= this.#slabs.length * SLAB_KEYS) this.#slabs.push(new Float32Array(SLAB_KEYS * this.steps));
    return index;
  }
}
