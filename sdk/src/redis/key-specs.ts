/**
 * Which arguments of a command are keys, for an adapter whose client hands over a flat argument
 * list and does not say (node-redis's `sendCommand(['SET', key, value])`; ioredis's `Command`
 * knows its keys itself). The table is Redis 7.0's key specifications (`COMMAND INFO`: each key
 * spec's `begin_search` and `find_keys`, as redis.io's "Command key specifications" describes
 * them) for the commands the core needs the keys of: every write of command-table.ts and the reads it
 * answers. key-specs.test.ts checks it against a live server's COMMAND and COMMAND GETKEYS.
 *
 * A spec Redis itself cannot describe (SORT's `STORE destination`) or a write missing from the
 * table (a newer server's) counts every argument as a key: a write then invalidates names that
 * are not keys, too much, never too little.
 */

/** Where the search starts: an argument index, or just after `keyword` searched from `startFrom` (negative: from the end, backwards). */
type Begin = number | readonly [keyword: string, startFrom: number];
/**
 * `r`: keys from the start up to `lastKey` (negative: from the end; with `limit`, a 1/limit share
 * of what is left), every `step`th. `n`: the argument at `keyNumIdx` says how many keys there are,
 * the first `firstKey` after the start, every `step`th. null: not describable.
 */
type Spec =
  | readonly [begin: Begin, kind: 'r', lastKey: number, step: number, limit: number]
  | readonly [begin: Begin, kind: 'n', keyNumIdx: number, firstKey: number, step: number]
  | null;

/** generated from redis-server 7.0 `COMMAND`; subcommands as `container|sub` */
export const KEY_SPECS: Readonly<Record<string, readonly Spec[]>> = {
  append: [[1, 'r', 0, 1, 0]],
  bitfield: [[1, 'r', 0, 1, 0]],
  bitop: [
    [2, 'r', 0, 1, 0],
    [3, 'r', -1, 1, 0],
  ],
  blmove: [
    [1, 'r', 0, 1, 0],
    [2, 'r', 0, 1, 0],
  ],
  blmpop: [[2, 'n', 0, 1, 1]],
  blpop: [[1, 'r', -2, 1, 0]],
  brpop: [[1, 'r', -2, 1, 0]],
  brpoplpush: [
    [1, 'r', 0, 1, 0],
    [2, 'r', 0, 1, 0],
  ],
  bzmpop: [[2, 'n', 0, 1, 1]],
  bzpopmax: [[1, 'r', -2, 1, 0]],
  bzpopmin: [[1, 'r', -2, 1, 0]],
  copy: [
    [1, 'r', 0, 1, 0],
    [2, 'r', 0, 1, 0],
  ],
  decr: [[1, 'r', 0, 1, 0]],
  decrby: [[1, 'r', 0, 1, 0]],
  del: [[1, 'r', -1, 1, 0]],
  expire: [[1, 'r', 0, 1, 0]],
  expireat: [[1, 'r', 0, 1, 0]],
  geoadd: [[1, 'r', 0, 1, 0]],
  georadius: [
    [1, 'r', 0, 1, 0],
    [['STORE', 6], 'r', 0, 1, 0],
    [['STOREDIST', 6], 'r', 0, 1, 0],
  ],
  georadiusbymember: [
    [1, 'r', 0, 1, 0],
    [['STORE', 5], 'r', 0, 1, 0],
    [['STOREDIST', 5], 'r', 0, 1, 0],
  ],
  geosearchstore: [
    [1, 'r', 0, 1, 0],
    [2, 'r', 0, 1, 0],
  ],
  getdel: [[1, 'r', 0, 1, 0]],
  getex: [[1, 'r', 0, 1, 0]],
  getset: [[1, 'r', 0, 1, 0]],
  hdel: [[1, 'r', 0, 1, 0]],
  hincrby: [[1, 'r', 0, 1, 0]],
  hincrbyfloat: [[1, 'r', 0, 1, 0]],
  hmset: [[1, 'r', 0, 1, 0]],
  hset: [[1, 'r', 0, 1, 0]],
  hsetnx: [[1, 'r', 0, 1, 0]],
  incr: [[1, 'r', 0, 1, 0]],
  incrby: [[1, 'r', 0, 1, 0]],
  incrbyfloat: [[1, 'r', 0, 1, 0]],
  linsert: [[1, 'r', 0, 1, 0]],
  lmove: [
    [1, 'r', 0, 1, 0],
    [2, 'r', 0, 1, 0],
  ],
  lmpop: [[1, 'n', 0, 1, 1]],
  lpop: [[1, 'r', 0, 1, 0]],
  lpush: [[1, 'r', 0, 1, 0]],
  lpushx: [[1, 'r', 0, 1, 0]],
  lrem: [[1, 'r', 0, 1, 0]],
  lset: [[1, 'r', 0, 1, 0]],
  ltrim: [[1, 'r', 0, 1, 0]],
  migrate: [
    [3, 'r', 0, 1, 0],
    [['KEYS', -2], 'r', -1, 1, 0],
  ],
  move: [[1, 'r', 0, 1, 0]],
  mset: [[1, 'r', -1, 2, 0]],
  msetnx: [[1, 'r', -1, 2, 0]],
  persist: [[1, 'r', 0, 1, 0]],
  pexpire: [[1, 'r', 0, 1, 0]],
  pexpireat: [[1, 'r', 0, 1, 0]],
  pfadd: [[1, 'r', 0, 1, 0]],
  pfdebug: [[2, 'r', 0, 1, 0]],
  pfmerge: [
    [1, 'r', 0, 1, 0],
    [2, 'r', -1, 1, 0],
  ],
  psetex: [[1, 'r', 0, 1, 0]],
  rename: [
    [1, 'r', 0, 1, 0],
    [2, 'r', 0, 1, 0],
  ],
  renamenx: [
    [1, 'r', 0, 1, 0],
    [2, 'r', 0, 1, 0],
  ],
  restore: [[1, 'r', 0, 1, 0]],
  'restore-asking': [[1, 'r', 0, 1, 0]],
  rpop: [[1, 'r', 0, 1, 0]],
  rpoplpush: [
    [1, 'r', 0, 1, 0],
    [2, 'r', 0, 1, 0],
  ],
  rpush: [[1, 'r', 0, 1, 0]],
  rpushx: [[1, 'r', 0, 1, 0]],
  sadd: [[1, 'r', 0, 1, 0]],
  sdiffstore: [
    [1, 'r', 0, 1, 0],
    [2, 'r', -1, 1, 0],
  ],
  set: [[1, 'r', 0, 1, 0]],
  setbit: [[1, 'r', 0, 1, 0]],
  setex: [[1, 'r', 0, 1, 0]],
  setnx: [[1, 'r', 0, 1, 0]],
  setrange: [[1, 'r', 0, 1, 0]],
  sinterstore: [
    [1, 'r', 0, 1, 0],
    [2, 'r', -1, 1, 0],
  ],
  smove: [
    [1, 'r', 0, 1, 0],
    [2, 'r', 0, 1, 0],
  ],
  sort: [[1, 'r', 0, 1, 0], null, null],
  spop: [[1, 'r', 0, 1, 0]],
  srem: [[1, 'r', 0, 1, 0]],
  sunionstore: [
    [1, 'r', 0, 1, 0],
    [2, 'r', -1, 1, 0],
  ],
  unlink: [[1, 'r', -1, 1, 0]],
  xack: [[1, 'r', 0, 1, 0]],
  xadd: [[1, 'r', 0, 1, 0]],
  xautoclaim: [[1, 'r', 0, 1, 0]],
  xclaim: [[1, 'r', 0, 1, 0]],
  xdel: [[1, 'r', 0, 1, 0]],
  'xgroup|delconsumer': [[2, 'r', 0, 1, 0]],
  'xgroup|createconsumer': [[2, 'r', 0, 1, 0]],
  'xgroup|create': [[2, 'r', 0, 1, 0]],
  'xgroup|destroy': [[2, 'r', 0, 1, 0]],
  'xgroup|setid': [[2, 'r', 0, 1, 0]],
  xreadgroup: [[['STREAMS', 4], 'r', -1, 1, 2]],
  xsetid: [[1, 'r', 0, 1, 0]],
  xtrim: [[1, 'r', 0, 1, 0]],
  zadd: [[1, 'r', 0, 1, 0]],
  zdiffstore: [
    [1, 'r', 0, 1, 0],
    [2, 'n', 0, 1, 1],
  ],
  zincrby: [[1, 'r', 0, 1, 0]],
  zinterstore: [
    [1, 'r', 0, 1, 0],
    [2, 'n', 0, 1, 1],
  ],
  zmpop: [[1, 'n', 0, 1, 1]],
  zpopmax: [[1, 'r', 0, 1, 0]],
  zpopmin: [[1, 'r', 0, 1, 0]],
  zrangestore: [
    [1, 'r', 0, 1, 0],
    [2, 'r', 0, 1, 0],
  ],
  zrem: [[1, 'r', 0, 1, 0]],
  zremrangebylex: [[1, 'r', 0, 1, 0]],
  zremrangebyrank: [[1, 'r', 0, 1, 0]],
  zremrangebyscore: [[1, 'r', 0, 1, 0]],
  zunionstore: [
    [1, 'r', 0, 1, 0],
    [2, 'n', 0, 1, 1],
  ],
  eval: [[2, 'n', 0, 1, 1]],
  evalsha: [[2, 'n', 0, 1, 1]],
  fcall: [[2, 'n', 0, 1, 1]],
  pfcount: [[1, 'r', -1, 1, 0]],
  get: [[1, 'r', 0, 1, 0]],
  hget: [[1, 'r', 0, 1, 0]],
  hgetall: [[1, 'r', 0, 1, 0]],
  mget: [[1, 'r', -1, 1, 0]],
  hmget: [[1, 'r', 0, 1, 0]],
};

/** The start of a spec's keys in `argv` (the name at 0), or -1 where its keyword is absent. */
function start(begin: Begin, argv: readonly unknown[]): number {
  if (typeof begin === 'number') return begin;
  const [keyword, from] = begin;
  const same = (a: unknown) => String(a).toUpperCase() === keyword;
  if (from >= 0) {
    for (let i = from; i < argv.length; i++) if (same(argv[i])) return i + 1;
  } else {
    for (let i = argv.length + from; i > 0; i--) if (same(argv[i])) return i + 1;
  }
  return -1;
}

function specKeys(spec: NonNullable<Spec>, argv: readonly unknown[], into: unknown[]): void {
  const first = start(spec[0], argv);
  if (first < 1 || first >= argv.length) return;
  if (spec[1] === 'r') {
    const [, , lastKey, step, limit] = spec;
    let last: number;
    if (lastKey >= 0) last = first + lastKey;
    else if (limit <= 1) last = argv.length + lastKey;
    else last = first + Math.floor((argv.length - first) / limit) + lastKey;
    for (let i = first; i <= Math.min(last, argv.length - 1); i += step) into.push(argv[i]);
    return;
  }
  const [, , keyNumIdx, firstKey, step] = spec;
  const count = Number(String(argv[first + keyNumIdx]));
  if (!Number.isSafeInteger(count) || count <= 0) return;
  for (let i = first + firstKey, n = 0; n < count && i < argv.length; i += step, n++) into.push(argv[i]);
}

/**
 * The keys of the command `argv` (name first, any case), in spec order (a key may repeat);
 * undefined for a command not in the table. A spec that cannot be described yields every argument.
 */
export function keysOf(argv: readonly unknown[]): unknown[] | undefined {
  const name = String(argv[0]).toLowerCase();
  const specs =
    KEY_SPECS[name] ?? (argv.length > 1 ? KEY_SPECS[`${name}|${String(argv[1]).toLowerCase()}`] : undefined);
  if (specs === undefined) return undefined;
  const keys: unknown[] = [];
  for (const spec of specs) {
    if (spec === null) return argv.slice(1);
    specKeys(spec, argv, keys);
  }
  return keys;
}
