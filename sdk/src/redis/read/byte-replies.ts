/**
 * Byte replies from the cache, for every adapter. A key has one cached entry, whoever reads it,
 * and it holds the value as the UTF-8 string a client decodes by default; a caller that asked for
 * Buffers (ioredis's `getBuffer`, node-redis's `BLOB_STRING: Buffer` type mapping) gets a new
 * Buffer of that string (its own copy: it cannot change the cache, nor another caller's reply).
 * That Buffer is exactly Redis's bytes only when they were valid UTF-8: a decode puts U+FFFD for
 * bytes that were not (WHATWG Encoding, "UTF-8 decode"), after which the string no longer says
 * what they were. So a string holding U+FFFD is never turned into bytes: the caller asks Redis.
 * The entry is never filled from a Buffer reply either: a Buffer reader's load is a read of
 * strings of its own, so a string reader of the key never gets a Buffer.
 */

/** U+FFFD: what a UTF-8 decode puts for bytes that were not UTF-8 */
export const REPLACEMENT = '\uFFFD';

/** A cached value as a Buffer caller's reply (null stays null); undefined: the string cannot say its bytes exactly. */
export function asBytes(value: unknown): Buffer | null | undefined {
  if (value === null) return null;
  if (typeof value !== 'string' || value.includes(REPLACEMENT)) return undefined;
  return Buffer.from(value, 'utf8');
}
