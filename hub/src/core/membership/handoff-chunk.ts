/**
 * The hub-to-hub handoff chunk: the keys of one app that move from one hub (`from`) to another
 * (`to`) at one membership epoch, with their windows (window-transfer.ts). msgpack through the
 * protocol module's value codec; never seen by an SDK. Bounded on both sides: a chunk holds at
 * most HANDOFF_CHUNK_KEYS keys and HANDOFF_CHUNK_BYTES bytes, and the decoder checks every field
 * before anything reads it (a bad chunk is refused whole, as 'malformed' or 'too_large').
 */
import { MAX_KEY_LENGTH, MAX_NAME_LENGTH, packValue, unpackValue } from '@hotkey/sdk/protocol';
import { WINDOW_SLICES } from '@hotkey/sdk/rules';
import type { WindowEntry } from '../aggregate/window-transfer.ts';

/** the chunk format's version (field `hk`) */
export const HANDOFF_FORMAT = 1;
/** keys in one chunk at most */
export const HANDOFF_CHUNK_KEYS = 500;
/** bytes of one encoded chunk at most (a sender splits well below it) */
export const HANDOFF_CHUNK_BYTES = 256 * 1024;
/** what a sender aims one chunk at: keys are counted at their worst-case UTF-8 size */
const CHUNK_BUDGET = HANDOFF_CHUNK_BYTES / 2;

export interface HandoffChunk {
  from: string;
  to: string;
  /** the membership epoch under which `to` owns the keys */
  epoch: number;
  /** '' in a marker: no app, no keys, only the sender's word that it reached `epoch` */
  app: string;
  /** this chunk's number among the `parts` of this sender's handoff of `app` to `to` */
  part: number;
  parts: number;
  entries: WindowEntry[];
}

/** Why a chunk (or some of its keys) was refused; each is a `hotkey_handoff_refused_<reason>_total` series. */
export const HandoffRefusal = {
  /** not a handoff chunk, or not addressed to this hub */
  Malformed: 'malformed',
  /** over HANDOFF_CHUNK_BYTES / HANDOFF_CHUNK_KEYS, or past the keys one sender may hand over per epoch */
  TooLarge: 'too_large',
  /** the sender is not a member, nor was one in the last few seconds */
  NotMember: 'not_member',
  /** the chunk's epoch is older than this hub's, or a newer one never came */
  StaleEpoch: 'stale_epoch',
  /** a key that is not this hub's at the epoch, or that the sender could not have owned before it */
  NotOwner: 'not_owner',
  /** a key another chunk of this epoch handed over already (two hubs claiming one key) */
  Conflict: 'conflict',
  /** an app this hub does not know */
  UnknownApp: 'unknown_app',
  /** chunks waiting for their epoch past the bound */
  Backlog: 'backlog',
} as const;
export type HandoffRefusal = (typeof HandoffRefusal)[keyof typeof HandoffRefusal];

/** Splits one app's entries for `to` into encoded chunks within the bounds. */
export function encodeChunks(
  head: { from: string; to: string; epoch: number; app: string },
  entries: readonly WindowEntry[],
): Uint8Array[] {
  const groups: WindowEntry[][] = [];
  let group: WindowEntry[] = [];
  let bytes = 0;
  for (const entry of entries) {
    const size = entry.key.length * 3 + 16 + WINDOW_SLICES * 9;
    if (group.length > 0 && (group.length >= HANDOFF_CHUNK_KEYS || bytes + size > CHUNK_BUDGET)) {
      groups.push(group);
      group = [];
      bytes = 0;
    }
    group.push(entry);
    bytes += size;
  }
  if (group.length > 0) groups.push(group);
  return groups.map((g, part) =>
    packValue({
      hk: HANDOFF_FORMAT,
      ...head,
      part,
      parts: groups.length,
      keys: g.map((e) => e.key),
      slice: g.map((e) => e.sliceMs),
      counts: g.flatMap((e) => e.slices),
      hot: g.map((e) => e.hotMs),
      age: g.map((e) => e.hotAgeMs),
    }),
  );
}

/**
 * A marker: a chunk with no app and no keys, which tells `to` that `from` had reached `epoch`
 * (handoff.ts sends one to each hub gaining keys from it; ownership-fence.ts waits for it).
 */
export function encodeMarker(head: { from: string; to: string; epoch: number }): Uint8Array {
  return packValue({
    hk: HANDOFF_FORMAT,
    ...head,
    part: 0,
    parts: 1,
    keys: [],
    slice: [],
    counts: [],
    hot: [],
    age: [],
  });
}

export class ChunkError extends Error {
  readonly reason: HandoffRefusal;
  constructor(reason: HandoffRefusal, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** Bytes to a chunk, or a ChunkError naming the refusal. */
export function decodeChunk(bytes: Uint8Array): HandoffChunk {
  if (bytes.byteLength > HANDOFF_CHUNK_BYTES)
    throw new ChunkError('too_large', `chunk of ${bytes.byteLength} bytes exceeds ${HANDOFF_CHUNK_BYTES}`);
  let m: unknown;
  try {
    m = unpackValue(bytes);
  } catch {
    throw new ChunkError('malformed', 'not msgpack');
  }
  if (typeof m !== 'object' || m === null || (m as { hk?: unknown }).hk !== HANDOFF_FORMAT)
    throw new ChunkError('malformed', 'not a handoff chunk');
  const c = m as Record<string, unknown>;
  const from = name(c, 'from');
  const to = name(c, 'to');
  const epoch = int(c, 'epoch');
  const marker = c.app === undefined && Array.isArray(c.keys) && c.keys.length === 0;
  const app = marker ? '' : name(c, 'app');
  const parts = int(c, 'parts');
  const part = int(c, 'part');
  if (part >= parts) throw new ChunkError('malformed', `part ${part} of ${parts}`);
  const keys = c.keys;
  if (!Array.isArray(keys)) throw new ChunkError('malformed', 'keys is not an array');
  if (keys.length > HANDOFF_CHUNK_KEYS)
    throw new ChunkError('too_large', `${keys.length} keys in one chunk exceed ${HANDOFF_CHUNK_KEYS}`);
  const n = keys.length;
  const slice = numbers(c, 'slice', n);
  const counts = numbers(c, 'counts', n * WINDOW_SLICES);
  const hot = numbers(c, 'hot', n);
  const age = numbers(c, 'age', n);
  const entries: WindowEntry[] = [];
  for (let i = 0; i < n; i++) {
    const key = keys[i];
    if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH)
      throw new ChunkError('malformed', `key ${i} is not a key`);
    if (!(slice[i]! > 0)) throw new ChunkError('malformed', `slice ${i} is not positive`);
    entries.push({
      key,
      sliceMs: slice[i]!,
      slices: counts.slice(i * WINDOW_SLICES, (i + 1) * WINDOW_SLICES),
      hotMs: hot[i]!,
      hotAgeMs: age[i]!,
    });
  }
  return { from, to, epoch, app, part, parts, entries };
}

function name(c: Record<string, unknown>, field: string): string {
  const v = c[field];
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_NAME_LENGTH)
    throw new ChunkError('malformed', `${field} is not a name`);
  return v;
}

function int(c: Record<string, unknown>, field: string): number {
  const v = c[field];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new ChunkError('malformed', `${field} is not a non-negative integer`);
  return v;
}

/** A field holding `length` finite non-negative numbers. */
function numbers(c: Record<string, unknown>, field: string, length: number): number[] {
  const v = c[field];
  if (!Array.isArray(v) || v.length !== length)
    throw new ChunkError('malformed', `${field} does not hold ${length} numbers`);
  for (const x of v)
    if (typeof x !== 'number' || !Number.isFinite(x) || x < 0)
      throw new ChunkError('malformed', `${field} holds a value that is not a non-negative number`);
  return v as number[];
}
