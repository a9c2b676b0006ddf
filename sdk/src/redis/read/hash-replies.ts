/**
 * A hash in the cache, whichever client read it. HGETALL's reply comes in several shapes (ioredis's
 * object; node-redis's flat RESP2 array `[field, value, …]`; a RESP3 map decoded as an object or
 * a `Map`); the cache keeps one: a frozen object of field → string value, built with
 * `defineProperty` so that a field named `__proto__` is a field like any other. HGET and HMGET of
 * a hot hash are answered from it (a hot hash is loaded once, whole: hot-read.ts).
 */

/** The cache's form of a hash. */
export type CachedHash = Readonly<Record<string, unknown>>;

/** hashes built here: given back as they are */
const built = new WeakSet<object>();

function freeze(entries: Iterable<readonly [unknown, unknown]>): CachedHash | undefined {
  const out: Record<string, unknown> = {};
  for (const [field, value] of entries) {
    if (typeof field !== 'string' || typeof value !== 'string') return undefined; // Buffers, nested replies: not cached
    Object.defineProperty(out, field, { value, enumerable: true, writable: false, configurable: false });
  }
  Object.freeze(out);
  built.add(out);
  return out;
}

function* pairs(flat: readonly unknown[]): Generator<readonly [unknown, unknown]> {
  for (let i = 0; i < flat.length; i += 2) yield [flat[i], flat[i + 1]];
}

/**
 * HGETALL's reply in any of its shapes as the cache's form (its own copy: a caller holding the
 * reply cannot change the cache); undefined for anything else (then nothing is cached from it).
 */
export function hashOf(reply: unknown): CachedHash | undefined {
  if (typeof reply !== 'object' || reply === null) return undefined;
  if (built.has(reply)) return reply as CachedHash;
  if (Array.isArray(reply)) return reply.length % 2 === 0 ? freeze(pairs(reply)) : undefined;
  if (reply instanceof Map) return freeze(reply.entries());
  if (Buffer.isBuffer(reply)) return undefined;
  return freeze(Object.keys(reply).map((field) => [field, (reply as Record<string, unknown>)[field]] as const));
}

/**
 * The values of `fields` in `hash` (null for a field it lacks), each through `as`; undefined when
 * `as` cannot give one exactly (the caller then asks Redis).
 */
export function pickFields(
  hash: CachedHash,
  fields: readonly string[],
  as: (value: unknown) => unknown = (value) => value,
): unknown[] | undefined {
  const picked: unknown[] = [];
  for (const field of fields) {
    const value = as(Object.hasOwn(hash, field) ? hash[field] : null);
    if (value === undefined) return undefined;
    picked.push(value);
  }
  return picked;
}

/**
 * The hash as RESP2's HGETALL reply, a flat `[field, value, …]` (each value through `as`), for a
 * client that builds its reply object itself: handed to it as Redis's reply would be, the object
 * is the client's own, whatever the field names (`__proto__`, a name an `Object.prototype`
 * property holds read-only). Undefined when `as` cannot give a value exactly.
 */
export function flatHash(hash: CachedHash, as: (value: unknown) => unknown = (value) => value): unknown[] | undefined {
  const flat: unknown[] = [];
  for (const field of Object.keys(hash)) {
    const value = as(hash[field]);
    if (value === undefined) return undefined;
    flat.push(field, value);
  }
  return flat;
}

/** an ECMAScript array index (0 … 2³² − 2): an object lists such keys first, in numeric order */
function isArrayIndex(field: string): boolean {
  return /^(?:0|[1-9]\d{0,9})$/.test(field) && Number(field) < 4294967295;
}

/**
 * Whether the cached hash lists its fields in the order Redis sent them: an object keeps insertion
 * order except for array-index names, which it moves to the front. A reply whose order shows (a
 * flat array, a `Map`) is built from the cache only when this holds.
 */
export function inReplyOrder(hash: CachedHash): boolean {
  for (const field of Object.keys(hash)) if (isArrayIndex(field)) return false;
  return true;
}
