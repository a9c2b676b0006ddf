/**
 * 32-bit string hash used by ownership and the SDK's sketches. FNV-1a over UTF-16 code units,
 * finished with murmur3's fmix32 so that nearby keys (`item:1`, `item:2`) spread over all bits.
 * Pure arithmetic with `Math.imul`: identical in Node and the browser, which ownership relies on.
 */
export function hashString(text: string, seed = 0): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h);
}

/** murmur3 fmix32: a bijective avalanche step. */
export function mix32(value: number): number {
  let h = value | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
