/**
 * How many distinct SDK instances report a key: linear counting over a 128-bit bitmap per slot
 * (Whang, Vander-Zanden & Taylor, "A linear-time probabilistic counting algorithm for database
 * applications", TODS 1990). Each session sets its instance's bit on every record; the estimate
 * is -m·ln(zeros / m) for m bits. The bitmaps themselves live in the slot slab (window-slab.ts); this
 * module is the arithmetic.
 */
import { hashString } from '@hotkey/sdk/internal';

/** uint32 words of one reporter bitmap */
export const REPORTER_WORDS = 4;
export const REPORTER_BITS = REPORTER_WORDS * 32;

/** The reporter bit (0..127) of an instance id; compute once per session, not per record. */
export function reporterBit(instance: string): number {
  // the SDK's string hash: consecutive ids (`i-1`, `i-2`) land on unrelated bits
  return hashString(instance) % REPORTER_BITS;
}

export function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** The linear-counting estimate of distinct reporters from the bits set (`ones`) of a bitmap. */
export function estimateReporters(ones: number): number {
  const zeros = REPORTER_BITS - ones;
  if (zeros === 0) return Math.round(REPORTER_BITS * Math.log(REPORTER_BITS));
  return Math.round(-REPORTER_BITS * Math.log(zeros / REPORTER_BITS));
}
