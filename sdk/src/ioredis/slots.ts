/**
 * Redis Cluster hash slots, computed here as Redis does (no round trip): CRC16-XMODEM of the key's
 * UTF-8 bytes — or of its hash tag, the bytes between the first `{` and the first `}` after it
 * when that span is not empty — modulo 16384. Pure; checked against `CLUSTER KEYSLOT` on a real
 * cluster (test/cluster/ioredis-replicas-cluster.test.ts).
 */

export const SLOTS = 16384;

const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let b = 0; b < 8; b++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    t[i] = crc;
  }
  return t;
})();

/** The cluster slot of `key` (a string is hashed as its UTF-8 bytes). */
export function keySlot(key: string | Uint8Array): number {
  const bytes = typeof key === 'string' ? Buffer.from(key) : key;
  let start = 0;
  let end = bytes.length;
  const open = bytes.indexOf(0x7b); // {
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1); // }
    if (close > open + 1) {
      start = open + 1;
      end = close;
    }
  }
  let crc = 0;
  for (let i = start; i < end; i++) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >>> 8) ^ bytes[i]!) & 0xff]!;
  return crc % SLOTS;
}
