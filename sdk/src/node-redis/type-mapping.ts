/**
 * The type mapping node-redis decodes a command's reply under, as the hook can tell it before
 * sending: the call's own `typeMapping` if it names one, else the client's command options.
 * node-redis v5's `sendCommand` spreads the client's (`_self._commandOptions`) under the call's
 * options, v6's the proxy's (`this._commandOptions`): they differ only for a `withTypeMapping` /
 * `withCommandOptions` proxy's own `sendCommand` call without options, and there the mapping is
 * UNKNOWN (nothing is answered locally: the cache cannot know which shape the caller expects).
 * A known mapping is served: strings as the cache holds them, Buffers through buffer-reads.ts.
 */
import type { CommandOptions, NodeRedisClient } from './context.ts';

/** The RESP type codes of node-redis's `typeMapping` the adapter reads (its RESP_TYPES) */
export const BLOB_STRING = 36;
export const MAP = 37;

/** a type mapping that could not be told */
export const UNKNOWN: unique symbol = Symbol('unknown type mapping');

export type Mapping = Readonly<Record<number, unknown>> | undefined | typeof UNKNOWN;

export function typeMappingOf(self: NodeRedisClient, options: CommandOptions | undefined): Mapping {
  if (options !== undefined && Object.hasOwn(options, 'typeMapping')) return options.typeMapping as Mapping;
  const own = self._commandOptions?.typeMapping;
  const base = (self._self ?? self)._commandOptions?.typeMapping;
  return (own === base ? own : UNKNOWN) as Mapping;
}

/**
 * Whether a known type mapping decodes bulk strings as Buffers: node-redis's decoder gives a
 * Buffer for `BLOB_STRING: Buffer` alone, and the string of the bytes for any other entry (or none).
 */
export function buffersFor(mapping: Mapping): boolean {
  return mapping !== UNKNOWN && mapping !== undefined && mapping[BLOB_STRING] === Buffer;
}
