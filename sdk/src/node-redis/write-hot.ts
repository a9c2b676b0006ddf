/**
 * The node-redis side of the write-hot modes (redis/write/write-hot.ts): which commands the hook hands
 * the core, and merged increments flushed before the client closes.
 * - Routed: GET / INCR / INCRBY / DECR / DECRBY sent on their own (a method or `sendCommand`),
 *   while a rule asks for shards or coalescing. Not routed, sent to the key as they are (still
 *   correct: GET sums the key and its shards): commands in `multi()` / `execAsPipeline()` or an
 *   open raw MULTI, and ASKING chains. Under a type mapping the core's plain reply is mapped as
 *   node-redis would map it (bulk strings to Buffers, numbers to strings); under another the
 *   command is not routed.
 * - `quit()` / `close()` (and a raw QUIT) send the merged increments first: a client's are queued
 *   ahead of its close (node-redis writes what is queued before it closes); a Cluster or a pool
 *   waits for them to land, since its sends look their node up, or wait for a client, first.
 */
import { keyName } from '../redis/identity.ts';
import type { WriteHot } from '../redis/write/write-hot.ts';
import { commandOf, type CommandOptions } from './context.ts';

/** RESP type codes in node-redis's `typeMapping` (RESP_TYPES): bulk string, number */
const BLOB_STRING = 36;
const NUMBER = 58;
const INCRS: ReadonlySet<string> = new Set(['incr', 'incrby', 'decr', 'decrby']);

/**
 * How a reply of RESP `type` is mapped (the command's options over its client's, as node-redis
 * merges them): a plain reply as it is, a bulk string to a Buffer, a number to a string; another
 * mapping: undefined (the command is not routed).
 */
function mapping(
  options: CommandOptions | undefined,
  clientOptions: CommandOptions | undefined,
  type: number,
): ((value: unknown) => unknown) | undefined {
  const typeMapping = (options?.typeMapping ?? clientOptions?.typeMapping) as Record<number, unknown> | undefined;
  const to = typeMapping?.[type];
  if (to === undefined) return (value) => value;
  if (type === BLOB_STRING && to === Buffer) return (value) => Buffer.from(String(value));
  if (type === NUMBER && to === String) return (value) => String(value);
  return undefined;
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
  const map = mapping(options, clientOptions, get ? BLOB_STRING : NUMBER);
  if (map === undefined) return undefined;
  return writeHot.route(commandOf(argv, options), name)?.then(map);
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
  for (const name of ['quit', 'QUIT', 'close']) {
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
