/**
 * Redis Cluster hash slots and shard names that spread over them.
 *
 * `hashSlot` is the cluster's own mapping (Redis Cluster specification, "Key distribution model"):
 * CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0) of the key's UTF-8 bytes, or of its hash
 * tag — the bytes between the first `{` and the first `}` after it, when that is not empty —
 * modulo 16384.
 *
 * `shardNames` names the N shard keys of a key so that their slots fall in N equal, consecutive
 * ranges of the 16384 slots. The names depend on the key and N only, never on the topology, so
 * every instance computes the same names; and since a cluster gives each master contiguous slot
 * ranges (`redis-cli --cluster create` splits them evenly), N ≥ masters shards land on every
 * master, N ≤ masters shards on different masters. A shard name is `{<tag>}<key>`: the tag comes
 * first, so it decides the slot whatever braces the key holds, and the key stays readable.
 */
import { hashString } from '../hash.ts';

export const SLOTS = 16384;

const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let b = 0; b < 8; b++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

function crc16(bytes: Uint8Array, start: number, end: number): number {
  let crc = 0;
  for (let i = start; i < end; i++) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ bytes[i]!) & 0xff]!;
  return crc;
}

const encoder = new TextEncoder();

/** The cluster hash slot of `key` (0–16383), as `CLUSTER KEYSLOT` computes it. */
export function hashSlot(key: string | Uint8Array): number {
  const bytes = typeof key === 'string' ? encoder.encode(key) : key;
  const open = bytes.indexOf(0x7b); // {
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1); // }
    if (close > open + 1) return crc16(bytes, open + 1, close) % SLOTS;
  }
  return crc16(bytes, 0, bytes.length) % SLOTS;
}

/** @deprecated renamed `hashSlot`; this name goes at the next minor version */
export const keySlot: typeof hashSlot = hashSlot;

/**
 * N shard key names of `key`, shard i hashing into slots [i·16384/N, (i+1)·16384/N). Found by
 * trying tags `<h>.<j>` (h: a hash of the key, so different keys use different slots) for
 * j = 0, 1, … until one lands in the range: about N tries per shard.
 */
export function shardNames(key: string, shards: number): string[] {
  if (!Number.isInteger(shards) || shards < 1 || shards > SLOTS)
    throw new TypeError(`shards must be an integer in 1..${SLOTS}, got ${String(shards)}`);
  const h = hashString(key).toString(36);
  const names: string[] = [];
  for (let i = 0; i < shards; i++) {
    const lo = Math.floor((i * SLOTS) / shards);
    const hi = Math.floor(((i + 1) * SLOTS) / shards);
    for (let j = 0; ; j++) {
      const tag = `${h}.${j}`;
      const slot = hashSlot(tag);
      if (slot >= lo && slot < hi) {
        names.push(`{${tag}}${key}`);
        break;
      }
    }
  }
  return names;
}

/**
 * A key name in the same slot as `key`, for bookkeeping that a Lua script must touch together
 * with it: `key` + suffix when `key` has a hash tag (the tag still comes first), else `{key}` +
 * suffix. Undefined when `key` holds a brace but no usable tag: no name can share its slot
 * reliably.
 */
export function sameSlotName(key: string, suffix: string): string | undefined {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    return close > open + 1 ? key + suffix : undefined;
  }
  return key.includes('}') ? undefined : `{${key}}${suffix}`;
}
