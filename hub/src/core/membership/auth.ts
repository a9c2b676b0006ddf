/**
 * Token checks. Comparison runs in constant time over SHA-256 digests, so neither the content nor
 * the length of a secret leaks through response timing. Tokens are never logged.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** True when `presented` equals `expected`; false for a missing token. */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  return timingSafeEqual(digest(presented), digest(expected));
}

/** The token of an `Authorization: Bearer …` header, if any. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
