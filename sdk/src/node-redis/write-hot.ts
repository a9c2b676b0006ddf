/**
 * The node-redis side of the write-hot modes (redis/write-hot.ts): which commands the hook hands
 * the core, and merged increments flushed before the client closes.
 * - Routed: GET / INCR / INCRBY / DECR / DECRBY sent on their own (a method or `sendCommand`),
 *   while a rule asks for shards or coalescing. Not routed, sent to the key as they are (still
 *   correct: GET sums the key and its shards): commands in `multi()` / `execAsPipeline()` or an
 *   open raw MULTI, ASKING chains, and replies under a type mapping (a GET whose bulk strings are
 *   mapped, an INCR whose numbers are): the core answers with plain strings and numbers.
 * - `quit()` / `close()` (and a raw QUIT) send the merged increments first: a client's are queued
 *   ahead of its close (node-redis writes what is queued before it closes); a Cluster or a pool
 *   waits for them to land, since its sends look their node up, or wait for a client, first.
 */
import { keyName } from '../redis/identity.ts';
import type { WriteHot } from '../redis/write-hot.ts';
import { commandOf, type CommandOptions } from './context.ts';

/** RESP type codes in node-redis's `typeMapping` (RESP_TYPES): bulk string, number */
const BLOB_STRING = 36;
const NUMBER = 58;
const INCRS: ReadonlySet<string> = new Set(['incr', 'incrby', 'decr', 'decrby']);

function mapped(typeMapping: object | undefined, type: number): boolean {
  return typeMapping !== undefined && (typeMapping as Record<number, unknown>)[type] !== undefined;
}

/**
 * A command sent on its own, routed when a write-hot mode applies (its promise), else undefined.
 * `clientOptions`: the calling proxy's command options (`withTypeMapping`).
 */
export function routeWriteHot(
  writeHot: WriteHot,
  argv: readonly unknown[],
  options: CommandOptions | undefined,
  clientOptions: CommandOptions | undefined,
  name: string,
): Promise<unknown> | undefined {
  if (name === 'quit') {
    void writeHot.flush();
    return undefined;
  }
  const get = name === 'get';
  if (get) {
    // GET pays one Map size check while nothing is sharded here (the read path's hot GETs come next)
    if (argv.length !== 2 || !writeHot.owns(keyName(argv[1]) ?? '')) return undefined;
  } else if (!INCRS.has(name) || !writeHot.active) return undefined;
  const type = get ? BLOB_STRING : NUMBER;
  if (mapped(options?.typeMapping, type) || mapped(clientOptions?.typeMapping, type)) return undefined;
  return writeHot.route(commandOf(argv, options), name);
}

type Method = (this: unknown, ...args: unknown[]) => unknown;

/**
 * `quit` / `close` over `base`'s, flushing `writeHot` first (see the module comment); `awaitFirst`:
 * close once the merged increments landed (a Cluster's or a pool's sends are queued later).
 */
export function closeHooks(
  writeHot: () => WriteHot | undefined,
  base: Record<string | symbol, unknown>,
  awaitFirst: boolean,
): PropertyDescriptorMap {
  const hooks: PropertyDescriptorMap = {};
  for (const name of ['quit', 'close']) {
    const method = base[name] as Method | undefined;
    if (typeof method !== 'function') continue;
    const value = function (this: unknown, ...args: unknown[]): unknown {
      const flushed = writeHot()?.flush();
      return awaitFirst && flushed !== undefined
        ? flushed.then(() => method.apply(this, args))
        : method.apply(this, args);
    };
    hooks[name] = { value, writable: true, configurable: true };
  }
  return hooks;
}
