/**
 * Field guards for decoded frames: each returns the field with its type narrowed, or throws a
 * ProtocolError naming it (the socket then closes with the code the error carries). The message
 * decoders and feed-protocol.ts check their frames with them.
 */
import { ErrorCode, ProtocolError } from '../errors.ts';
import { protocolError } from './codec.ts';
import { CloseCode } from './codes.ts';
import { MAX_KEY_LENGTH, MAX_NAME_LENGTH } from '../limits.ts';

export function str(m: Record<string, unknown>, field: string, max = MAX_NAME_LENGTH): string {
  const v = m[field];
  if (typeof v !== 'string') protocolError(`"${field}" must be a string`);
  if (v.length > max) protocolError(`"${field}" is longer than ${max}`);
  return v;
}
export function optStr(m: Record<string, unknown>, field: string): string | undefined {
  return m[field] === undefined ? undefined : str(m, field);
}
export function int(m: Record<string, unknown>, field: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const v = m[field];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    protocolError(`"${field}" must be an integer in [${min}, ${max}]`);
  return v;
}
export function num(m: Record<string, unknown>, field: string): number {
  const v = m[field];
  if (typeof v !== 'number' || !Number.isFinite(v)) protocolError(`"${field}" must be a finite number`);
  return v;
}
export function bool(m: Record<string, unknown>, field: string): boolean {
  const v = m[field];
  if (typeof v !== 'boolean') protocolError(`"${field}" must be a boolean`);
  return v;
}
export function arr(m: Record<string, unknown>, field: string, max: number): unknown[] {
  const v = m[field];
  if (!Array.isArray(v)) protocolError(`"${field}" must be an array`);
  if (v.length > max) protocolError(`"${field}" has more than ${max} items`);
  return v;
}
export function bin(m: Record<string, unknown>, field: string, max: number): Uint8Array {
  const v = m[field];
  if (!(v instanceof Uint8Array)) protocolError(`"${field}" must be msgpack bin`);
  if (v.byteLength > max) protocolError(`"${field}" is larger than ${max} bytes`);
  return v;
}
export function obj(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) protocolError(`${what} must be a map`);
  return v as Record<string, unknown>;
}

/** Throws HK_ERR_KEY_TOO_LONG (close 4005) for an empty key or one over MAX_KEY_LENGTH. */
export function assertKey(key: unknown, what = 'key'): asserts key is string {
  if (typeof key !== 'string') protocolError(`${what} must be a string`);
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw new ProtocolError(
      ErrorCode.KeyTooLong,
      `${what} must be 1 to ${MAX_KEY_LENGTH} characters, got ${key.length}`,
      CloseCode.KeyTooLong,
    );
  }
}
