/**
 * A node-redis argument list's command name, lower case, as the adapter's tables name commands.
 * The hook and the breaker read it for every command: `toLowerCase()` makes a new string each
 * time, so the names met are kept (a bounded table: commands are few, but `sendCommand` takes
 * any string).
 */

/** names kept at most; past it a name is lower-cased on each use */
const MAX_NAMES = 512;
const names = new Map<string, string>();

export function commandName(head: unknown): string {
  if (typeof head !== 'string') return String(head).toLowerCase();
  const known = names.get(head);
  if (known !== undefined) return known;
  const name = head.toLowerCase();
  if (names.size < MAX_NAMES) names.set(head, name);
  return name;
}
