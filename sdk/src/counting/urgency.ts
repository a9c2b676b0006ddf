/**
 * Surges in the access window (window.ts): which counted keys must be reported now rather than
 * up to a flush interval later.
 *
 * Once thresholds are set, each slot carries the total at which it next becomes urgent
 * (`crossAt`); the counting path compares against it (one integer compare) and calls `cross`
 * on reaching it. That lists the slot as urgent and calls `onUrgent`, so the owner can report it
 * at once (`collect`). After its first crossing a key stays urgent for `urgentSlices` slices,
 * re-arming every further threshold's worth of accesses (the hub's cluster sum then trails the
 * surge closely); after that it is quiet until it has spent a window below its threshold, so
 * steady and oscillating keys are not urgent.
 */
import { appended, EMPTY, type Collected } from './collect.ts';
import type { RulePolicy } from './rule-policy.ts';
import type { CounterTable } from './counter-table.ts';

const MAX_U32 = 0xffffffff;

export class Urgency {
  readonly #t: CounterTable;
  readonly #urgentSlices: number;
  readonly #onUrgent: (() => void) | undefined;

  constructor(table: CounterTable, urgentSlices: number, onUrgent: (() => void) | undefined) {
    this.#t = table;
    this.#urgentSlices = urgentSlices;
    this.#onUrgent = onUrgent;
  }

  /** Whether some slot became urgent since the last collect. */
  get pending(): boolean {
    return this.#t.urgentCount > 0;
  }

  /** The slot reached its `crossAt` in slice `now`: urgent, and re-armed while its episode lasts. */
  cross(slot: number, now: number): void {
    const t = this.#t;
    if (t.urgentEnd[slot] === -Infinity) t.urgentEnd[slot] = now + this.#urgentSlices;
    if (now >= t.urgentEnd[slot]!) {
      t.crossAt[slot] = 0;
      return;
    }
    t.crossAt[slot] = Math.min(t.totals[slot]! + t.threshold[slot]!, MAX_U32);
    if (t.urgentMark[slot] === 0) {
      t.urgentMark[slot] = 1;
      t.urgent[t.urgentCount++] = slot;
    }
    this.#onUrgent?.();
  }

  /** A fresh slot with threshold `thr` (in counted accesses) and its first `counted` access. */
  arm(slot: number, thr: number, counted: number, now: number): void {
    const t = this.#t;
    t.threshold[slot] = thr;
    t.crossAt[slot] = thr;
    t.urgentEnd[slot] = -Infinity;
    if (thr === 1 && counted === 1) this.cross(slot, now);
  }

  /** The slot's threshold changed to `thr`: a key already at it counts as having just crossed it. */
  rearm(slot: number, thr: number, now: number): void {
    const t = this.#t;
    if (thr === t.threshold[slot]) return;
    t.threshold[slot] = thr;
    t.urgentEnd[slot] = -Infinity;
    t.crossAt[slot] = thr;
    if (thr !== 0 && t.totals[slot]! >= thr) this.cross(slot, now);
  }

  /**
   * The window moved to slice `now`, `expired` counts leaving the slot's total: an episode that
   * is over leaves the key quiet until it spent a whole window (`slices`) below its threshold.
   */
  expire(slot: number, now: number, slices: number, expired: number): void {
    const t = this.#t;
    const end = t.urgentEnd[slot]!;
    if (end === -Infinity || now < end) return;
    if (now >= end + slices && t.totals[slot]! - expired < t.threshold[slot]!) {
      t.urgentEnd[slot] = -Infinity;
      t.crossAt[slot] = t.threshold[slot]!;
    } else t.crossAt[slot] = 0;
  }

  /** Ends the slot's urgent episode at slice `now` (it is hot already: its reports need not hurry). */
  calm(slot: number, now: number): void {
    const t = this.#t;
    if (t.threshold[slot] === 0) return;
    if (t.urgentEnd[slot] === -Infinity || t.urgentEnd[slot]! > now) t.urgentEnd[slot] = now;
    t.crossAt[slot] = 0;
  }

  /** Forgets the urgent list (a full collect reports everything due anyway). */
  clear(): void {
    const t = this.#t;
    for (let u = 0; u < t.urgentCount; u++) t.urgentMark[t.urgent[u]!] = 0;
    t.urgentCount = 0;
  }

  /**
   * The urgent keys that are at their threshold and were accessed since they were last
   * collected; their pending counts are reset, other keys' left for the next full collect.
   * Costs O(urgent keys).
   */
  collect(policy: RulePolicy): Collected {
    const t = this.#t;
    let out: Collected | undefined;
    for (let u = 0; u < t.urgentCount; u++) {
      const slot = t.urgent[u]!;
      t.urgentMark[slot] = 0;
      const pending = t.pending[slot]!;
      const total = t.totals[slot]!;
      const thr = t.threshold[slot]!;
      // the slot may have been released (and reused) since it was listed: check it afresh
      if (pending === 0 || thr === 0 || total < thr || t.keys[slot] === undefined) continue;
      t.pending[slot] = 0;
      const rule = t.ruleOf[slot]!;
      out = appended(out, t.keys[slot]!, policy.scaled(Math.min(pending, total), rule), rule);
    }
    t.urgentCount = 0;
    return out ?? EMPTY;
  }
}
