/**
 * The protocol's test vectors as data (test-vectors.json, described in PROTOCOL.md) and the check
 * of one vector against this codec. Conformance tools in other packages read the vectors from
 * here; the generator that writes the file is test-vectors.test-helper.ts. Runtime-agnostic, like
 * protocol.ts: no `node:` imports.
 */
import stored from './test-vectors.json' with { type: 'json' };
import { ProtocolError } from '../errors.ts';
import { hashString } from '../hash.ts';
import { Ownership } from '../ownership.ts';
import { decodeClientMessage, decodeServerMessage, encode, packValue, unpackValue, type Message } from './protocol.ts';

/** Who decodes the frame: the hub (frames a client sends), a client (frames a hub sends), or a pushed value's bytes. */
export type Direction = 'to-hub' | 'to-client' | 'value';

export interface VectorError {
  code: string;
  close: number;
  message: string;
}

export interface Vector {
  name: string;
  direction: Direction;
  /** the frame, lowercase hex; `<xx*N>` is byte xx repeated N times */
  hex: string;
  /** what was encoded, when `hex` is exactly `encode(input)` (or `packValue(input)`) */
  input?: unknown;
  /** the decoded message, as JSON (see `toJson`) */
  decoded?: unknown;
  /** why the frame is refused */
  error?: VectorError;
  /** what the case shows */
  note?: string;
}

/** Key ownership (PROTOCOL.md, "Cluster"): the hash of each key and its owner among `hubs`. */
export interface OwnershipVectors {
  hubs: string[];
  cases: { key: string; hash: number; owner: string }[];
}

export interface VectorFile {
  protocolVersion: number;
  generatedBy: string;
  format: string;
  vectors: Vector[];
  ownership: OwnershipVectors;
}

// ---- JSON forms of what msgpack holds and JSON does not ----

/** Uint8Array -> {"$bin": hex}, Date -> {"$date": iso}, Set -> {"$set": [...]}, bigint -> {"$bigint": "n"}, undefined -> {"$undefined": true}. */
export function toJson(value: unknown): unknown {
  if (value instanceof Uint8Array) return { $bin: bytesToHex(value) };
  if (value instanceof Date) return { $date: value.toISOString() };
  if (value instanceof Set) return { $set: [...value].map(toJson) };
  if (typeof value === 'bigint') return { $bigint: value.toString() };
  if (value === undefined) return { $undefined: true };
  if (Array.isArray(value)) return value.map(toJson);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    // absent optional fields (undefined) are left out, as the codec leaves them out of a frame
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = toJson(v);
    return out;
  }
  return value;
}

/** The inverse of `toJson`. */
export function fromJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(fromJson);
  if (typeof value !== 'object' || value === null) return value;
  const o = value as Record<string, unknown>;
  if (typeof o.$bin === 'string') return hexToBytes(o.$bin);
  if (typeof o.$date === 'string') return new Date(o.$date);
  if (Array.isArray(o.$set)) return new Set(o.$set.map(fromJson));
  if (typeof o.$bigint === 'string') return BigInt(o.$bigint);
  if (o.$undefined === true) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) out[k] = fromJson(v);
  return out;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Hex with `<xx*N>` runs expanded, to bytes; throws on anything else. */
export function hexToBytes(hex: string): Uint8Array {
  const expanded = hex.replace(/<([0-9a-f]{2})\*(\d+)>/g, (_, byte: string, n: string) => byte.repeat(Number(n)));
  if (!/^(?:[0-9a-f]{2})*$/.test(expanded)) throw new Error(`not hex (with <xx*N> runs): ${hex.slice(0, 80)}`);
  const out = new Uint8Array(expanded.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(expanded.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** Bytes to hex, runs of more than 32 equal bytes written `<xx*N>`. */
export function bytesToHex(bytes: Uint8Array): string {
  let hex = '';
  for (const b of bytes) hex += HEX[b]!;
  return hex.replace(/((?:[0-9a-f]{2}))\1{32,}/g, (run: string, byte: string) => `<${byte}*${run.length / 2}>`);
}

// ---- running a frame through the code ----

export function decoderOf(direction: Direction): (bytes: Uint8Array) => unknown {
  return direction === 'to-hub' ? decodeClientMessage : direction === 'to-client' ? decodeServerMessage : unpackValue;
}

/** What the current code makes of a frame: `{ decoded }` or `{ error }` (a ProtocolError's code and close code). */
export function run(direction: Direction, bytes: Uint8Array): { decoded: unknown } | { error: VectorError } {
  try {
    return { decoded: toJson(decoderOf(direction)(bytes)) };
  } catch (err) {
    if (err instanceof ProtocolError) return { error: { code: err.code, close: err.closeCode, message: err.message } };
    throw err;
  }
}

/** What is wrong with a stored vector against the current code, or undefined when it holds. */
export function checkVector(v: Vector): string | undefined {
  const what = `vector "${v.name}" (${v.direction})`;
  let bytes: Uint8Array;
  try {
    bytes = hexToBytes(v.hex);
  } catch (err) {
    return `${what}: ${(err as Error).message}`;
  }
  if (v.input !== undefined) {
    const input = fromJson(v.input);
    const now = bytesToHex(v.direction === 'value' ? packValue(input) : encode(input as Message));
    if (now !== v.hex)
      return `${what}: encode() now writes ${now.slice(0, 120)}, the vector holds ${v.hex.slice(0, 120)}`;
  }
  const result = run(v.direction, bytes);
  if ('error' in result) {
    const e = result.error;
    if (v.error === undefined)
      return `${what} no longer decodes: ${e.code} (close ${e.close}) ${e.message}; expected ${JSON.stringify(v.decoded).slice(0, 200)}`;
    if (e.code !== v.error.code || e.close !== v.error.close || e.message !== v.error.message)
      return `${what} is refused differently: now ${e.code} (close ${e.close}) "${e.message}", the vector says ${v.error.code} (close ${v.error.close}) "${v.error.message}"`;
    return undefined;
  }
  if (v.error !== undefined)
    return `${what} is accepted now (as ${JSON.stringify(result.decoded).slice(0, 200)}) but must be refused with ${v.error.code} (close ${v.error.close})`;
  const now = JSON.stringify(result.decoded);
  if (now !== JSON.stringify(v.decoded))
    return `${what} decodes differently: now ${now.slice(0, 200)}, the vector says ${JSON.stringify(v.decoded).slice(0, 200)}`;
  return undefined;
}

/** What is wrong with the ownership vectors against the current code (one line each). */
export function checkOwnership(o: OwnershipVectors): string[] {
  const ownership = new Ownership(o.hubs);
  const problems: string[] = [];
  for (const c of o.cases) {
    const hash = hashString(c.key);
    const owner = ownership.owner(c.key);
    if (hash !== c.hash)
      problems.push(`ownership: hash(${JSON.stringify(c.key)}) is now ${hash}, the vector says ${c.hash}`);
    if (owner !== c.owner)
      problems.push(`ownership: ${JSON.stringify(c.key)} is now owned by ${owner}, the vector says ${c.owner}`);
  }
  return problems;
}

/** The vectors published with this version of the protocol. */
export function storedVectors(): VectorFile {
  return stored as VectorFile;
}
