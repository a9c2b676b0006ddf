/**
 * Hash reads of hot keys on node-redis: HGET, HGETALL and HMGET (methods and `sendCommand` alike:
 * both reach the hook with the argument list) through the core's one-key hot read
 * (redis/read/hot-read.ts), the path GET takes: cache hit, one tracked load per key, TTL capped by
 * PTTL, namespace and tracking-session checks. A hot hash is cached whole (redis/read/hash-replies.ts).
 *
 * The hook answers with the reply `sendCommand` would give, before node-redis's own
 * `transformReply` (which then runs on it as on Redis's): HGET a string or null, HMGET an array
 * of them (RESP2 and RESP3 alike), HGETALL in the client's shape (hash-shapes.ts), learned from
 * the first reply Redis gives this client under that type mapping (that read goes to Redis).
 * - Under a type mapping of bulk strings to Buffers, HGET and HMGET answer Buffers
 *   (buffer-reads.ts) and HGETALL goes to Redis.
 * - Nothing is answered locally under a type mapping the hook cannot tell (type-mapping.ts), or
 *   one of maps to anything but an object, `Map` or array.
 * - A field named by a Buffer, a wrong arity: sent as is (Redis says what is wrong).
 */
import { hashOf, pickFields } from '../redis/read/hash-replies.ts';
import type { Send } from '../redis/command.ts';
import { keyName } from '../redis/identity.ts';
import { commandOf, withoutTypeMapping, type CommandOptions, type Context, type NodeRedisClient } from './context.ts';
import { shapeOf, type HashCommand, type Shape } from './hash-shapes.ts';
import { buffersFor, MAP, typeMappingOf, UNKNOWN } from './type-mapping.ts';
import type { BufferReads, SendPlain } from './buffer-reads.ts';
import { asBytes } from '../redis/read/byte-replies.ts';

export const HASH_READS: ReadonlySet<string> = new Set(['hget', 'hgetall', 'hmget']);

export interface HashReads {
  /**
   * An HGET / HGETALL / HMGET (`argv`, name lower-cased) of a hot key, answered through the hot
   * read path: its promise; undefined when the hook sends it as usual (cold, or not servable).
   */
  read(self: NodeRedisClient, argv: readonly unknown[], options: CommandOptions | undefined, name: string): unknown;
}

/**
 * `send` sends a core command past the hook; `sendPlain` an argument list past it (as the
 * caller's own `sendCommand` would).
 */
export function hashReads(
  ctx: Context,
  send: Send<NodeRedisClient>,
  sendPlain: SendPlain,
  buffers: BufferReads,
): HashReads {
  const { hk, reads } = ctx;
  /** per client (its `_self`), per map type mapping: the shape of its HGETALL replies */
  const shapes = new WeakMap<object, Map<unknown, Shape>>();

  function learn(self: NodeRedisClient, mapType: unknown, reply: unknown): void {
    const shape = shapeOf(reply);
    if (shape === undefined) return;
    const real = self._self ?? self;
    let known = shapes.get(real);
    if (known === undefined) shapes.set(real, (known = new Map()));
    known.set(mapType, shape);
  }

  function read(self: NodeRedisClient, argv: readonly unknown[], options: CommandOptions | undefined, name: string) {
    const key = keyName(argv[1]);
    if (key === undefined) return undefined;
    const fields = argv.slice(2);
    if (name === 'hget' ? fields.length !== 1 : name === 'hmget' ? fields.length === 0 : fields.length !== 0)
      return undefined;
    if (!fields.every((field) => typeof field === 'string')) return undefined;
    if (!hk.isHot(key)) {
      // cold: counted before it is sent, as the core counts a GET; unless this very count made
      // the key surge here (client/read/surge-local.ts), then it goes on as a hot read
      ctx.tracking?.reading();
      hk.track(key);
      if (!hk.isHot(key)) return sendPlain(self, argv, options);
    }
    const mapping = typeMappingOf(self, options);
    if (mapping === UNKNOWN) return undefined;
    const inBuffers = buffersFor(mapping);
    if (name === 'hget')
      return inBuffers
        ? buffers.hot(self, argv, options, 'hget')
        : reads.read(self, send, commandOf(argv, options), 'hget');
    if (name === 'hmget') return fieldsOf(self, argv, options, fields as string[], inBuffers);
    if (inBuffers) return undefined; // HGETALL in Buffers: Redis answers (buffer-reads.ts)
    const mapType = mapping?.[MAP];
    if (mapType !== undefined && mapType !== Map && mapType !== Array) return undefined;
    const shape = shapes.get(self._self ?? self)?.get(mapType);
    if (shape === undefined) {
      // Redis answers this one; its reply tells the shape of the next
      ctx.tracking?.reading();
      hk.track(key);
      const sent = sendPlain(self, argv, options);
      sent.then(
        (reply) => learn(self, mapType, reply),
        () => {},
      );
      return sent;
    }
    const command: HashCommand = commandOf(argv, options);
    command.hashShape = shape;
    return reads.read(self, send, command, 'hgetall');
  }

  /**
   * HMGET of a hot hash: the hash read whole through the hot path (one load), the fields picked
   * from it (as Buffers with `inBuffers`, when the cache can give them exactly).
   */
  function fieldsOf(
    self: NodeRedisClient,
    argv: readonly unknown[],
    options: CommandOptions | undefined,
    fields: string[],
    inBuffers: boolean,
  ) {
    const whole = commandOf(['HGETALL', argv[1]], withoutTypeMapping(options));
    reads.read(self, send, whole, 'hgetall');
    return whole.promise.then(
      (reply) => {
        const hash = hashOf(reply);
        const picked = hash === undefined ? undefined : pickFields(hash, fields, inBuffers ? asBytes : undefined);
        return picked ?? sendPlain(self, argv, options); // not a hash of strings: Redis answers
      },
      () => sendPlain(self, argv, options), // the load failed: this read tries itself
    );
  }

  return { read };
}
