/**
 * The aggregator's options (aggregator.ts) and their defaults, with the shape of its counters.
 */
import type { Rule } from '@hotkey/sdk/rules';
import type { AggregatorListener } from '../decide/decide.ts';
import { DEFAULT_TUNABLES } from '../tunables.ts';

export interface AggregatorOptions {
  rules: readonly Rule[];
  listener: AggregatorListener;
  /** keys tracked at most; more are admitted by evicting the smallest sampled non-hot key @default 100000 */
  maxKeys?: number;
  /** slots allocated up front; the slab doubles up to `maxKeys` @default 1024 */
  initialCapacity?: number;
  /** slots examined per eviction @default 8 */
  evictionSamples?: number;
  /** slots `tick` checks for emptiness per call, to free idle keys @default 2048 */
  sweepPerTick?: number;
  /** random source in [0, 1) for eviction sampling @default Math.random */
  random?: () => number;
  /** keys this hub may track (its own, in a cluster); checked once per admission @default every key */
  accept?: (key: string) => boolean;
  /** share of a rule's threshold the SDKs together may leave unreported (baseline priors) @default 0.2 */
  reportFraction?: number;
  /** ms since epoch at construction (starts the baseline warm-up) @default 0 */
  now?: number;
  /** hot keys at most; at the cap a stronger candidate displaces the weakest sampled one @default Infinity */
  maxHot?: number;
}

export interface AggregatorStats {
  keys: number;
  hot: number;
  /** records dropped because the slab was full of hot keys */
  dropped: number;
  /** keys evicted to admit others */
  evicted: number;
  /** records whose key matches no rule, or that another hub owns */
  ignored: number;
  /** crossings not promoted: the only reporter's connection was out of solo budget */
  soloRefused: number;
  /** crossings not promoted: the hot set was at `maxHot` and the key was not stronger than the weakest sampled */
  capRefused: number;
  /** hot keys demoted to make room for a stronger one */
  displaced: number;
  /** new keys not tracked: their session (or its address) held its part of the full key table and sampled none it may replace */
  keysRefused: number;
  /** of `keysRefused`, those whose session was under its own part while its address held the address's */
  keysRefusedForAddress: number;
  /** keys evicted from sessions holding their part of the full key table */
  evictedOverShare: number;
  /** remote addresses whose sessions hold keys of the table (its fair parts are per address first) */
  shareAddresses: number;
}

/** defaults of AggregatorOptions; the two the hub also tunes are its tunables' */
export const AGGREGATOR_DEFAULTS = {
  maxKeys: DEFAULT_TUNABLES.maxKeysPerApp,
  initialCapacity: 1024,
  evictionSamples: 8,
  sweepPerTick: 2048,
  reportFraction: DEFAULT_TUNABLES.localThresholdFraction,
} as const;
