/**
 * The identity of a hot row across feed frames. App names never contain NUL (the hub refuses
 * them), so `app \0 key` is unambiguous and cheap to build per row.
 */
export function rowId(app: string, key: string): string {
  return `${app}\u0000${key}`;
}
