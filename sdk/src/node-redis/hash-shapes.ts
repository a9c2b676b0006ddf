/**
 * The shape of a node-redis client's HGETALL reply, before node-redis's `transformReply`: RESP2
 * gives a flat array `[field, value, …]`; RESP3 a map, decoded by the type mapping of maps as an
 * object (v5 makes it with a null prototype, v6 a plain one), a `Map` or a flat array. The
 * adapter does not guess the version or the default RESP: hash-reads.ts learns the shape from a
 * reply Redis gave the client, and this module builds the same shape from a cached hash. A flat
 * array or a `Map` shows the fields' order, which the cached object keeps except for array-index
 * names (redis/read/hash-replies.ts): such a hash is not built for them (Redis answers).
 */
import type { RedisCommand } from '../redis/command.ts';
import { inReplyOrder, type CachedHash } from '../redis/read/hash-replies.ts';

/** How a client's HGETALL reply comes, as learned from one of Redis's. */
export type Shape = 'flat' | 'map' | 'null-object' | 'object';

/** An HGETALL of the caller's, with the shape its reply takes; absent on our own (the cached form is wanted). */
export interface HashCommand extends RedisCommand {
  hashShape?: Shape;
}

export function shapeOf(reply: unknown): Shape | undefined {
  if (Array.isArray(reply)) return 'flat';
  if (reply instanceof Map) return 'map';
  if (typeof reply !== 'object' || reply === null) return undefined;
  const proto = Object.getPrototypeOf(reply);
  if (proto === null) return 'null-object';
  return proto === Object.prototype ? 'object' : undefined;
}

/**
 * A cached hash as an HGETALL of `command` replies (its own copy); the cached form for a command
 * of ours; undefined when the shape shows an order the cache does not keep. The context's `hashReply`.
 */
export function hashReply(command: RedisCommand, hash: CachedHash): unknown {
  const shape = (command as HashCommand).hashShape;
  if (shape === undefined) return hash;
  if ((shape === 'flat' || shape === 'map') && !inReplyOrder(hash)) return undefined;
  const fields = Object.keys(hash);
  if (shape === 'map') return new Map(fields.map((field) => [field, hash[field]]));
  if (shape === 'flat') return fields.flatMap((field) => [field, hash[field]]);
  // assigned one by one, as node-redis's decoder fills the object (a `__proto__` field included)
  const out: Record<string, unknown> = shape === 'null-object' ? Object.create(null) : {};
  for (const field of fields) out[field] = hash[field];
  return out;
}
