/**
 * The protocol's bounds: how big a frame, a key, a name, a pushed value or a list may be, and
 * the lease a hub grants by default. Both ends check them (the decoders here, the hub's in-place
 * Report reader, the SDK's options), so each lives once, here.
 */
/** frames larger than this are refused with HK_ERR_FRAME_TOO_LARGE / close 4004 */
export const MAX_FRAME_BYTES = 1 << 20;
/** keys longer than this (UTF-16 code units) are refused with HK_ERR_KEY_TOO_LONG / close 4005 */
export const MAX_KEY_LENGTH = 1024;
/** bytes of one pushed value (Push, Value) at most: a frame must still fit in MAX_FRAME_BYTES */
export const MAX_VALUE_BYTES = MAX_FRAME_BYTES - 2 * MAX_KEY_LENGTH - 1024;
/** keys in one Limit frame */
export const MAX_LIMIT_KEYS = 65_536;
/** keys in one Hold, Release or Drop frame (protocol 3) */
export const MAX_HOLD_KEYS = 4096;
/** records in one Report frame */
export const MAX_REPORT_KEYS = 65_536;
/** a Report's counts (and hits, loads) are integers in [0, MAX_COUNT] */
export const MAX_COUNT = 0x7fffffff;
/** app, instance, host and hub names at most this long */
export const MAX_NAME_LENGTH = 256;
/**
 * The lease a hub grants when not configured otherwise (its `leaseMs` tunable), and the one an
 * SDK assumes to pace its first Lease requests. An SDK serves a hub's cached values only while its
 * lease from that hub is current; a hub acks an invalidation for an SDK that did not apply it only
 * once that SDK's lease surely lapsed — so this is the bound on write latency under a partition.
 */
export const DEFAULT_LEASE_MS = 2000;
/** fenced instance ids listed in one Ack at most (the rest are counted, not named) */
export const MAX_FENCED_IDS = 64;
