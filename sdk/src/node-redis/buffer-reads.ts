/**
 * Reads of hot keys by a caller whose type mapping decodes bulk strings as Buffers (node-redis's
 * `withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer })`, or a client created with it): GET and
 * MGET (client-hook.ts), HGET and HMGET (hash-reads.ts) are answered from the cache as Buffers.
 *
 * - The cache holds one entry per key, as strings (redis/read/byte-replies.ts), shared with the key's
 *   string readers: such a read goes through the hot read path as a read of strings of our own
 *   (the caller's options without the type mapping), never as the caller's command, whose Buffer
 *   reply would become the entry a string reader is then handed.
 * - Its reply is a new Buffer of the cached string when that is exactly Redis's bytes; a value
 *   that was not UTF-8 (or a failed read) is asked of Redis with the caller's own command.
 * - A cold key's read is the caller's own command, counted and sent at once.
 * - HGETALL under such a mapping is Redis's to answer (hash-reads.ts): its field names would be
 *   Buffers too, in a shape node-redis builds per version and RESP.
 */
import { asBytes } from '../redis/read/byte-replies.ts';
import type { Send } from '../redis/command.ts';
import type { HotReads } from '../redis/read/hot-read.ts';
import { keyName } from '../redis/identity.ts';
import { commandOf, withoutTypeMapping, type CommandOptions, type Context, type NodeRedisClient } from './context.ts';

/** sends an argument list past the hook, as the caller's own `sendCommand` would */
export type SendPlain = (
  self: NodeRedisClient,
  argv: readonly unknown[],
  options: CommandOptions | undefined,
) => Promise<unknown>;

/** what a read through the cache gives when Redis must answer it instead */
export const ASK_REDIS: unique symbol = Symbol('ask Redis');

/**
 * A read (`argv`: GET or HGET) of a hot key through the hot read path, as the caller decodes it:
 * the cached strings, or with `buffers` a read of strings of ours turned into Buffers. ASK_REDIS
 * for a value that cannot be given exactly, or a failed read.
 */
export function cachedRead(
  reads: HotReads<NodeRedisClient>,
  send: Send<NodeRedisClient>,
  self: NodeRedisClient,
  argv: readonly unknown[],
  options: CommandOptions | undefined,
  name: 'get' | 'hget',
  buffers: boolean,
): Promise<unknown> {
  const command = commandOf(argv, buffers ? withoutTypeMapping(options) : options);
  reads.read(self, send, command, name);
  return command.promise.then(
    (value) => {
      if (!buffers) return value;
      const bytes = asBytes(value); // null (no such key) stays null
      return bytes === undefined ? ASK_REDIS : bytes;
    },
    () => ASK_REDIS,
  );
}

export interface BufferReads {
  /** a GET (`argv`) under a mapping of bulk strings to Buffers: a hot key's from the cache, a cold key's sent */
  get(self: NodeRedisClient, argv: readonly unknown[], options: CommandOptions | undefined): Promise<unknown>;
  /** a GET or HGET of a hot key, as Buffers from the cache; Redis answers what the cache cannot give exactly */
  hot(
    self: NodeRedisClient,
    argv: readonly unknown[],
    options: CommandOptions | undefined,
    name: 'get' | 'hget',
  ): Promise<unknown>;
}

export function bufferReads(ctx: Context, send: Send<NodeRedisClient>, sendPlain: SendPlain): BufferReads {
  const { hk, reads } = ctx;

  function hot(
    self: NodeRedisClient,
    argv: readonly unknown[],
    options: CommandOptions | undefined,
    name: 'get' | 'hget',
  ): Promise<unknown> {
    return cachedRead(reads, send, self, argv, options, name, true).then((reply) =>
      reply === ASK_REDIS ? sendPlain(self, argv, options) : reply,
    );
  }

  function get(self: NodeRedisClient, argv: readonly unknown[], options: CommandOptions | undefined): Promise<unknown> {
    const key = keyName(argv[1]);
    if (key === undefined) return sendPlain(self, argv, options);
    ctx.tracking?.reading();
    if (!hk.isHot(key)) {
      // cold: counted, then sent as is; unless this very count made the key surge here (client/read/surge-local.ts)
      hk.track(key);
      if (!hk.isHot(key)) return sendPlain(self, argv, options);
    }
    return hot(self, argv, options, 'get');
  }

  return { get, hot };
}
