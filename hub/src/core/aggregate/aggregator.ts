/**
 * Cluster-wide sliding windows for one app's keys: the hub's ingest hot path, and the one object
 * the rest of the hub holds per app. The data path through it, one file a step:
 *
 *   ingest      this file: each Report's records are added to their key's slot, a new key is
 *               matched to its rule once and admitted (or ignored: no rule, another hub's key)
 *   store       window-slab.ts: the slab of per-key windows, lazy rotation, sampled eviction at maxKeys
 *   fairness    fair-shares.ts: which session admitted each key, so that none evicts the others'
 *   rules       ../decide/rule-table.ts: the rules compiled to typed arrays, the detectors
 *   reporters   reporter-count.ts: distinct reporting instances by linear counting
 *   decide      ../decide/decide.ts: promotion, demotion and hot-set admission; detectors/ beside it
 *   read        hot-view.ts: the hot keys as the API, the feed and the broadcasts see them
 *   change      reassign.ts: tracked keys under new rules or a new share of the cluster's keys
 *   options     aggregator-options.ts: the options, their defaults and the counters' shape
 *
 * A fixed rule without a pre-declared window costs one compare per record in the loop below;
 * every other rule hands the record to `Decider.judge`. The loop keeps the slab's arrays in
 * locals (fields reloaded per record cost a load and a check each).
 *
 * Pure: no timers, no I/O; time comes in as `now` (ms) on every call.
 */
import type { Rule } from '@hotkey/sdk/rules';
import { WINDOW_SLICES } from '@hotkey/sdk/rules';
import { AGGREGATOR_DEFAULTS as DEFAULTS, type AggregatorOptions, type AggregatorStats } from './aggregator-options.ts';
import { Decider, type AggregatorListener, type DemoteReason, type PromotionBudget } from '../decide/decide.ts';
import { hotViews, type HotKeyView } from './hot-view.ts';
import { reassignOwnership, reassignRules } from './reassign.ts';
import type { ReportFrame } from '../ingest/report-frame.ts';
import { NONE, RuleTable } from '../decide/rule-table.ts';
import type { FairShare } from './fair-shares.ts';
import { exportWindows, importWindow, type WindowEntry } from './window-transfer.ts';
import {
  BITS,
  BITS_STRIDE,
  REPORTER_WINDOW,
  RULE,
  rollReporters,
  rotateSlot,
  SLICES,
  SLOT_STRIDE,
  WindowSlab,
  TICK,
  TOTAL,
} from './window-slab.ts';

export type {
  AggregatorListener,
  AggregatorOptions,
  AggregatorStats,
  DemoteReason,
  HotKeyView,
  FairShare,
  PromotionBudget,
  WindowEntry,
};

const NEGATIVE_CACHE_MAX = 10_000;

export class Aggregator {
  readonly #rules: RuleTable;
  readonly #slots: WindowSlab;
  readonly #decider: Decider;
  #accept: ((key: string) => boolean) | undefined;
  /** keys matching no rule or owned by another hub, so that a repeat costs one Set lookup */
  readonly #negative = new Set<string>();
  #dropped = 0;
  #ignored = 0;
  /** the session whose records the current ingest call carries: new keys are admitted on its share */
  #share: FairShare | undefined;

  constructor(options: AggregatorOptions) {
    const maxKeys = Math.max(1, options.maxKeys ?? DEFAULTS.maxKeys);
    const samples = Math.max(1, options.evictionSamples ?? DEFAULTS.evictionSamples);
    const random = options.random ?? Math.random;
    this.#accept = options.accept;
    this.#rules = new RuleTable(
      options.rules,
      options.now ?? 0,
      maxKeys,
      options.reportFraction ?? DEFAULTS.reportFraction,
    );
    this.#slots = new WindowSlab(this.#rules, {
      maxKeys,
      initialCapacity: options.initialCapacity ?? DEFAULTS.initialCapacity,
      samples,
      sweepPerTick: Math.max(0, options.sweepPerTick ?? DEFAULTS.sweepPerTick),
      random,
    });
    this.#decider = new Decider(this.#slots, this.#rules, {
      listener: options.listener,
      maxHot: Math.max(1, options.maxHot ?? Infinity),
      samples,
      random,
      track: (key, now) =>
        this.#negative.has(key) || (this.#accept !== undefined && !this.#accept(key)) ? -1 : this.#admit(key, now),
    });
  }

  /** rules in effect (DEFAULT_RULE when the app has none) */
  get rules(): readonly Rule[] {
    return this.#rules.rules;
  }

  get stats(): AggregatorStats {
    return {
      keys: this.#slots.index.size,
      hot: this.#decider.hotSlots.size,
      dropped: this.#dropped,
      evicted: this.#slots.evicted,
      ignored: this.#ignored,
      soloRefused: this.#decider.soloRefused,
      capRefused: this.#decider.capRefused,
      displaced: this.#decider.displaced,
      keysRefused: this.#slots.shares.refused,
      keysRefusedForAddress: this.#slots.shares.refusedForAddress,
      evictedOverShare: this.#slots.shares.evictedOverShare,
      shareAddresses: this.#slots.shares.addresses,
    };
  }

  /**
   * A session's share of the key table (fair admission, fair-shares.ts); pass it to every ingest call.
   * @param [address=''] the session's remote address: the table is shared fairly among addresses first
   */
  openShare(address?: string): FairShare {
    return this.#slots.shares.open(address);
  }

  /** The session closed: the keys it admitted stay tracked, owned by nobody. */
  closeShare(share: FairShare): void {
    this.#slots.shares.close(share);
  }

  /**
   * Adds `counts[i]` accesses of `keys[i]` at `now`, for i in [from, to). `reporter` is the sending
   * instance's bit from `reporterBit`; `solo` is its connection's budget for keys only it reports
   * (none: unlimited); `share` its session's share of the key table (none: admission is not
   * limited per session). Promotes synchronously. Allocates nothing per record for tracked keys.
   */
  ingest(
    keys: readonly string[],
    counts: readonly number[],
    reporter: number,
    now: number,
    solo?: PromotionBudget,
    from = 0,
    to = keys.length,
    share?: FairShare,
  ): void {
    this.#share = share;
    // per rule, once per call: the current slice, its index in the ring and the reporter window
    // (two float divisions and a float modulo per record cost as much as the rest of the loop)
    this.#rules.hoist(now);
    const n = Math.min(to, keys.length);
    for (let i = from; i < n; ) i = this.#ingestRun(keys, counts, undefined, reporter, now, solo, i, n);
  }

  /**
   * As `ingest`, for a Report frame read in place (report-frame.ts), from its cursor's record to
   * record `to`: a tracked key is found by its bytes, and only a key not tracked yet is decoded to
   * a string. The cursor ends at `to`.
   */
  ingestFrame(
    frame: ReportFrame,
    reporter: number,
    now: number,
    solo?: PromotionBudget,
    to = frame.length,
    share?: FairShare,
  ): void {
    this.#share = share;
    this.#rules.hoist(now);
    const n = Math.min(to, frame.length);
    for (let i = frame.index; i < n; ) i = this.#ingestRun(undefined, undefined, frame, reporter, now, solo, i, n);
  }

  /**
   * The ingest loop proper, over records [i, n) of `keys`/`counts` or, without them, of `frame`
   * (whose cursor stands at record i), with the slab's arrays in locals (fields reloaded per
   * record cost a load and a check each; an admission that grows the slab reloads them). Returns
   * early, with the next record's index, after a promotion (it reaches the listener, which may
   * change anything), so that the caller starts a fresh run.
   */
  #ingestRun(
    keys: readonly string[] | undefined,
    counts: readonly number[] | undefined,
    frame: ReportFrame | undefined,
    reporter: number,
    now: number,
    solo: PromotionBudget | undefined,
    i: number,
    n: number,
  ): number {
    const word = reporter >>> 5;
    const bit = 1 << (reporter & 31);
    // only arrays in locals: the rare calls below go through `this` (fewer live values in the loop)
    const slotOf = this.#slots.index;
    let slab = this.#slots.slab;
    let slabBits = this.#slots.bits;
    let hotUntil = this.#slots.hotUntil;
    let lowSince = this.#slots.lowSince;
    let hot = this.#slots.hot;
    let previous = this.#slots.reportersPrevious;
    const { special, threshold, hotMs, sliceNow, sliceIndex, genNow } = this.#rules;
    for (; i < n; i++) {
      let count: number;
      let slot: number;
      // a new key's admission may grow the slab (then the locals below are reloaded)
      let admitted = false;
      if (frame === undefined) {
        count = counts![i]!;
        if (!(count > 0)) continue;
        const key = keys![i]!;
        const found = slotOf.get(key);
        if (found === undefined) {
          slot = this.#admit(key, now, this.#share);
          admitted = true;
        } else slot = found;
      } else {
        frame.next();
        count = frame.count;
        if (!(count > 0)) continue;
        slot =
          frame.seed === slotOf.seed
            ? slotOf.getHashed(frame.bytes, frame.keyStart, frame.keyLength, frame.hashes[i]!)
            : slotOf.getBytes(frame.bytes, frame.keyStart, frame.keyLength);
        if (slot < 0) {
          slot = this.#admit(frame.key(), now, this.#share);
          admitted = true;
        }
      }
      if (slot < 0) continue;
      if (admitted && this.#slots.slab !== slab) {
        const slots = this.#slots;
        slab = slots.slab;
        slabBits = slots.bits;
        hotUntil = slots.hotUntil;
        lowSince = slots.lowSince;
        hot = slots.hot;
        previous = slots.reportersPrevious;
      }
      const at = slot * SLOT_STRIDE;
      const r = slabBits[slot * BITS_STRIDE + RULE]!;
      const cur = sliceNow[r]!;
      if (slab[at + TICK] !== cur) rotateSlot(slab, slot, cur);
      // a clock that stepped back leaves the slot ahead of `cur`: count in its own current slice
      const tick = slab[at + TICK]!;
      const index = tick === cur ? sliceIndex[r]! : tick % WINDOW_SLICES;
      slab[at + SLICES + index]! += count;
      const total = (slab[at + TOTAL]! += count);

      const gen = genNow[r]!;
      if (gen !== slab[at + REPORTER_WINDOW]) rollReporters(slab, slabBits, previous, slot, gen);
      slabBits[slot * BITS_STRIDE + BITS + word]! |= bit;

      if (special[r] !== 0) {
        if (this.#decider.judge(slot, r, count, total, now)) return i + 1;
        continue;
      }
      if (total >= threshold[r]!) {
        hotUntil[slot] = now + hotMs[r]!;
        lowSince[slot] = NONE;
        if (hot[slot] === 0 && this.#decider.admitHot(slot, solo, now)) {
          this.#decider.promote(slot, now, false);
          return i + 1;
        }
      }
    }
    return n;
  }

  /**
   * A new key, admitted on `share`: its slot, or -1 when no rule matches it, another hub owns it
   * or no sampled slot may be replaced (all hot, or `share` holds its part of the table).
   */
  #admit(key: string, now: number, share?: FairShare): number {
    if (this.#negative.has(key)) {
      this.#ignored++;
      return -1;
    }
    const r = this.#accept === undefined || this.#accept(key) ? this.#rules.match(key) : -1;
    if (r < 0) {
      // unmatched and foreign keys alike: remember them so a repeat costs one Set lookup
      if (this.#negative.size >= NEGATIVE_CACHE_MAX) this.#negative.clear();
      this.#negative.add(key);
      this.#ignored++;
      return -1;
    }
    const slot = this.#slots.allocate(key, r, now, share);
    if (slot === -1) this.#dropped++;
    return slot < 0 ? -1 : slot;
  }

  /** Demotes hot keys that cooled or expired, and frees idle cold keys. Call every ~100 ms. */
  tick(now: number): void {
    this.#decider.tick(now);
    this.#slots.sweep(now);
  }

  /**
   * True once per pre-declared window start or end reached by `now`: the SDKs' per-instance
   * thresholds changed (1 inside a window), so the caller sends the app a Config.
   */
  transitionDue(now: number): boolean {
    return this.#rules.transitionDue(now);
  }

  /** Marks a key hot by hand (dashboard / API). False when no rule matches it or the slab is full of hot keys. */
  promote(key: string, now: number): boolean {
    let slot = this.#slots.index.get(key);
    if (slot === undefined) slot = this.#admit(key, now);
    if (slot < 0) return false;
    this.#decider.promoteByHand(slot, now);
    return true;
  }

  /** Demotes a hot key by hand; false when it was not hot. */
  demote(key: string, now: number): boolean {
    const slot = this.#slots.index.get(key);
    if (slot === undefined || this.#slots.hot[slot] === 0) return false;
    this.#decider.demote(slot, 'manual', now);
    return true;
  }

  isHot(key: string): boolean {
    const slot = this.#slots.index.get(key);
    return slot !== undefined && this.#slots.hot[slot] === 1;
  }

  /** Current window total of a key (0 when untracked). */
  count(key: string, now: number): number {
    const slot = this.#slots.index.get(key);
    if (slot === undefined) return 0;
    this.#slots.rotate(slot, now);
    return this.#slots.totalOf(slot);
  }

  /** A key's accesses per second over the time its window covers at `now` (0 when untracked). */
  qps(key: string, now: number): number {
    const slot = this.#slots.index.get(key);
    return slot === undefined ? 0 : this.#slots.qps(slot, now);
  }

  /** The hot keys, unordered. */
  hot(now: number): HotKeyView[] {
    return hotViews(this.#slots, this.#rules, this.#decider.hotSlots, now);
  }

  /**
   * Replaces the rules. Keys now matching no rule are dropped (demoted with reason 'rules' when
   * hot); keys whose rule's window length changed restart their window; hot keys stay hot.
   */
  setRules(rules: readonly Rule[], now: number): void {
    this.#negative.clear();
    reassignRules(this.#slots, this.#rules, this.#decider, rules, now);
  }

  /**
   * Changes which keys this aggregator may track (cluster ownership) at `now` and forgets the
   * others without demotion events: their new owner decides now, and SDKs resynchronise on the new
   * member epoch. Returns how many it forgot.
   */
  setAccept(accept: ((key: string) => boolean) | undefined, now: number): number {
    this.#accept = accept;
    this.#negative.clear();
    return reassignOwnership(this.#slots, this.#rules, this.#decider, accept, now);
  }

  /**
   * The windows and hot state of the tracked keys `dest` moves to another hub, by new owner, at
   * most `max` (window-transfer.ts). Call before `setAccept` forgets them.
   */
  exportWindows(
    dest: (key: string) => string | undefined,
    now: number,
    max: number,
  ): { byOwner: Map<string, WindowEntry[]>; dropped: number } {
    return exportWindows(this.#slots, this.#rules, dest, now, max);
  }

  /**
   * Merges a window another hub handed over, read `delayMs` ago (window-transfer.ts). 'untracked':
   * the key is not this hub's, matches no rule, or the table is full of hot keys.
   */
  importWindow(entry: WindowEntry, now: number, delayMs: number): 'merged' | 'promoted' | 'untracked' {
    const slot = this.#slots.index.get(entry.key) ?? this.#admit(entry.key, now);
    if (slot < 0) return 'untracked';
    return importWindow(this.#slots, this.#rules, this.#decider, slot, entry, now, delayMs) ? 'promoted' : 'merged';
  }

  /**
   * Changes the key cap (the hub shares one key budget among its apps). Lowering it evicts the
   * smallest non-hot keys until the app fits (hot keys stay: they are bounded by the rules' own
   * promotion budget); raising it lets the slab grow again.
   */
  setMaxKeys(maxKeys: number, now: number): void {
    this.#slots.setMaxKeys(Math.max(1, Math.floor(maxKeys)), now);
  }

  /** the key cap now */
  get maxKeys(): number {
    return this.#slots.maxKeys;
  }
}
