/**
 * A key's window and hot state out of one aggregator and into another, for a membership change:
 * the hub that owned the key (and counted its reports) hands what it counted to the new owner, so
 * the new owner's window holds the whole surge instead of starting from zero.
 *
 * What moves: the window's slice counts by age (age 0 = the slice `now` falls in), the slice
 * length they were counted in, and, for a hot key, the lifetime its promotion has left and how
 * long ago it was promoted. What does not: the reporter bitmaps (instance ids are per hub), a
 * baseline's history (the detector re-learns), the demotion hysteresis (it restarts).
 *
 * Merge: counts add to what the receiver counted itself (each report reached one hub, so nothing
 * is counted twice); a hot key stays hot for the lifetime it had left (or longer, if the receiver
 * renewed it); a fixed-threshold key whose merged window reaches its threshold is promoted at once,
 * since the surge may already be over by the time its reports would have crossed it here.
 */
import { WINDOW_SLICES } from '@hotkey/sdk/rules';
import type { Decider } from '../decide/decide.ts';
import { MODE_FIXED, NONE, type RuleTable } from '../decide/rule-table.ts';
import { SLICES, SLOT_STRIDE, TICK, TOTAL, type WindowSlab } from './window-slab.ts';

/** One key as handed over. */
export interface WindowEntry {
  key: string;
  /** the slice length the counts were taken in (ms) */
  sliceMs: number;
  /** WINDOW_SLICES counts, newest first: [0] is the slice the sender's `now` fell in */
  slices: number[];
  /** ms the key's promotion had left; 0: not hot */
  hotMs: number;
  /** ms since the key was promoted (hot keys only) */
  hotAgeMs: number;
}

/**
 * The tracked keys that `dest` moves to another hub (it returns the new owner, or undefined for
 * a key that stays), grouped by new owner: hot keys first, then the fullest windows, at most
 * `max` in all (`dropped`: how many did not fit). Keys with an empty window that are not hot are
 * left out (nothing to carry).
 */
export function exportWindows(
  slots: WindowSlab,
  rules: RuleTable,
  dest: (key: string) => string | undefined,
  now: number,
  max: number,
): { byOwner: Map<string, WindowEntry[]>; dropped: number } {
  const picked: { to: string; slot: number; rank: number }[] = [];
  for (const [key, slot] of slots.index) {
    const to = dest(key);
    if (to === undefined) continue;
    slots.rotate(slot, now);
    const hot = slots.hot[slot] === 1 && slots.hotUntil[slot]! > now;
    const total = slots.totalOf(slot);
    if (!hot && total <= 0) continue;
    picked.push({ to, slot, rank: hot ? Infinity : total });
  }
  let dropped = 0;
  if (picked.length > max) {
    picked.sort((a, b) => b.rank - a.rank);
    dropped = picked.length - Math.max(0, max);
    picked.length = Math.max(0, max);
  }
  const out = new Map<string, WindowEntry[]>();
  for (const { to, slot } of picked) {
    let list = out.get(to);
    if (list === undefined) out.set(to, (list = []));
    list.push(entryOf(slots, rules, slot, now));
  }
  return { byOwner: out, dropped };
}

function entryOf(slots: WindowSlab, rules: RuleTable, slot: number, now: number): WindowEntry {
  const at = slot * SLOT_STRIDE;
  const tick = slots.slab[at + TICK]!;
  const slices: number[] = [];
  for (let age = 0; age < WINDOW_SLICES; age++)
    slices.push(slots.slab[at + SLICES + ((((tick - age) % WINDOW_SLICES) + WINDOW_SLICES) % WINDOW_SLICES)]!);
  const hot = slots.hot[slot] === 1 && slots.hotUntil[slot]! > now;
  return {
    key: slots.keys[slot]!,
    sliceMs: rules.sliceMs[slots.ruleOf(slot)]!,
    slices,
    hotMs: hot ? Math.ceil(slots.hotUntil[slot]! - now) : 0,
    hotAgeMs: hot ? Math.max(0, Math.floor(now - slots.hotSince[slot]!)) : 0,
  };
}

/**
 * Merges `entry` into `slot` (already tracking `entry.key` under this hub's rule), `delayMs`
 * after the sender read it: its slices move that many slices older, and those past the window
 * are dropped. Counts taken in another slice length (the rules changed in between) are not
 * merged; the hot state is. True when the key was promoted here by the merge.
 */
export function importWindow(
  slots: WindowSlab,
  rules: RuleTable,
  decider: Decider,
  slot: number,
  entry: WindowEntry,
  now: number,
  delayMs: number,
): boolean {
  const r = slots.ruleOf(slot);
  const sliceMs = rules.sliceMs[r]!;
  slots.rotate(slot, now);
  if (entry.sliceMs === sliceMs) {
    const at = slot * SLOT_STRIDE;
    const tick = slots.slab[at + TICK]!;
    const shift = Math.max(0, Math.floor(delayMs / sliceMs));
    let added = 0;
    for (let age = 0; age + shift < WINDOW_SLICES; age++) {
      const count = entry.slices[age]!;
      if (!(count > 0)) continue;
      const t = tick - age - shift;
      slots.slab[at + SLICES + (((t % WINDOW_SLICES) + WINDOW_SLICES) % WINDOW_SLICES)]! += count;
      added += count;
    }
    slots.slab[at + TOTAL]! += added;
  }
  const wasHot = slots.hot[slot] === 1;
  const lifetime = entry.hotMs - delayMs;
  if (lifetime > 0) {
    slots.hotUntil[slot] = Math.max(slots.hotUntil[slot]!, now + lifetime);
    slots.lowSince[slot] = NONE;
    if (wasHot || !decider.admitHot(slot, undefined, now)) return false;
    decider.promote(slot, now, false);
    slots.hotSince[slot] = now - entry.hotAgeMs;
    return true;
  }
  if (wasHot || rules.mode[r] !== MODE_FIXED || rules.special[r] !== 0) return false;
  if (slots.totalOf(slot) < rules.threshold[r]!) return false;
  slots.hotUntil[slot] = now + rules.hotMs[r]!;
  slots.lowSince[slot] = NONE;
  if (!decider.admitHot(slot, undefined, now)) return false;
  decider.promote(slot, now, false);
  return true;
}
