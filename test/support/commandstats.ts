/**
 * What Redis itself executed, read from `INFO commandstats` (every connection of the server
 * counted): how tests and benchmarks tell a read served locally from one that reached Redis.
 */

interface InfoReader {
  info(section: string): Promise<string>;
}

/** Calls of `name` (lower case, as Redis lists it) in an `INFO commandstats` reply; 0 if never called. */
export function callsIn(info: string, name: string): number {
  return Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
}

/** Calls of the named commands, summed, on the server behind `redis`. */
export async function commandCalls(redis: InfoReader, ...names: string[]): Promise<number> {
  const info = await redis.info('commandstats');
  return names.reduce((sum, name) => sum + callsIn(info, name), 0);
}

/** Calls of every command but those whose name starts with one of `except` (the probe's own INFO, say). */
export async function allCommandCalls(redis: InfoReader, except: readonly string[]): Promise<number> {
  let total = 0;
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm))
    if (!except.some((prefix) => m[1]!.startsWith(prefix))) total += Number(m[2]);
  return total;
}
