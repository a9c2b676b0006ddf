/**
 * The Redis command table as the ioredis adapter needs it: which commands write keys, which
 * reads it can answer locally, which write a whole database. Names are lower case, as ioredis
 * puts them on its `Command`; the keys of a command come from ioredis itself
 * (`Command#getKeys()`, which already applied `keyPrefix` and knows `numkeys` of EVAL, FCALL …).
 *
 * `WRITES` is Redis 7.0's `COMMAND INFO`: every command flagged `write` with keys (fixed or
 * movable; subcommands such as `XGROUP CREATE` appear under their container, `xgroup`), plus the
 * commands whose key specs are read-write: PFCOUNT, and the scripts `eval`, `evalsha`, `fcall`
 * (their declared keys are treated as written; `eval_ro`, `evalsha_ro`, `fcall_ro` and
 * `defineCommand({ readOnly: true })` are not). `command-table.test.ts` asks a live redis-server
 * and fails when one is missing.
 */
export const WRITES: ReadonlySet<string> = new Set([
  'append',
  'bitfield',
  'bitop',
  'blmove',
  'blmpop',
  'blpop',
  'brpop',
  'brpoplpush',
  'bzmpop',
  'bzpopmax',
  'bzpopmin',
  'copy',
  'decr',
  'decrby',
  'del',
  'expire',
  'expireat',
  'geoadd',
  'georadius',
  'georadiusbymember',
  'geosearchstore',
  'getdel',
  'getex',
  'getset',
  'hdel',
  'hincrby',
  'hincrbyfloat',
  'hmset',
  'hset',
  'hsetnx',
  'incr',
  'incrby',
  'incrbyfloat',
  'linsert',
  'lmove',
  'lmpop',
  'lpop',
  'lpush',
  'lpushx',
  'lrem',
  'lset',
  'ltrim',
  'migrate',
  'move',
  'mset',
  'msetnx',
  'persist',
  'pexpire',
  'pexpireat',
  'pfadd',
  'pfdebug',
  'pfmerge',
  'psetex',
  'rename',
  'renamenx',
  'restore',
  'restore-asking',
  'rpop',
  'rpoplpush',
  'rpush',
  'rpushx',
  'sadd',
  'sdiffstore',
  'set',
  'setbit',
  'setex',
  'setnx',
  'setrange',
  'sinterstore',
  'smove',
  'sort',
  'spop',
  'srem',
  'sunionstore',
  'unlink',
  'xack',
  'xadd',
  'xautoclaim',
  'xclaim',
  'xdel',
  'xgroup',
  'xreadgroup',
  'xsetid',
  'xtrim',
  'zadd',
  'zdiffstore',
  'zincrby',
  'zinterstore',
  'zmpop',
  'zpopmax',
  'zpopmin',
  'zrangestore',
  'zrem',
  'zremrangebylex',
  'zremrangebyrank',
  'zremrangebyscore',
  'zunionstore',
  // scripts and functions: declared keys are RW in their key specs
  'eval',
  'evalsha',
  'fcall',
  // PFCOUNT may rewrite the HyperLogLog's cached cardinality (its key spec is RW): GET sees it
  'pfcount',
  // newer servers (7.2+ / 8.x): harmless on 7.0, which rejects them
  'hgetdel',
  'hgetex',
  'hsetex',
  'hexpire',
  'hpexpire',
  'hexpireat',
  'hpexpireat',
  'hpersist',
  'delex',
  'msetex',
  'vadd',
  'vrem',
  'vsetattr',
]);

/**
 * Writes that touch every key of a database (or two): no key list to invalidate. The wrapper
 * settles them after `hk.invalidateAll(namespace)` — a flush broadcast through the hub that drops
 * every instance's cached values (wrapper.ts `flushedBy` names the namespaces).
 */
export const KEYSPACE_WRITES: ReadonlySet<string> = new Set(['flushdb', 'flushall', 'swapdb']);

/**
 * Reads answered from the local cache for hot keys. One cache entry per Redis key: GET caches
 * the string reply; HGETALL the whole hash; a hot HGET loads the whole hash once (HGETALL) and
 * answers every field from it.
 */
export const READS = { get: 'string', hgetall: 'hash', hget: 'hash' } as const satisfies Record<
  string,
  'string' | 'hash'
>;
export type ReadName = keyof typeof READS;

export function isRead(name: string): name is ReadName {
  return name === 'get' || name === 'hget' || name === 'hgetall';
}
