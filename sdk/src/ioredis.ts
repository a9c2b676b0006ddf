/**
 * ioredis adapter: the only module that touches ioredis (types only; ioredis is a peer
 * dependency). `withHotKeys(redis, hk)` returns a view of the client whose reads go through
 * `hk.get` (so hot keys are served from the local cache) and whose writes run the real command,
 * then invalidate every key they wrote, cluster-wide.
 *
 * One cache entry per Redis key, so one invalidation covers every read of it: `get` caches the
 * string, `hgetall` the whole hash, and `hget` on a hot key loads the whole hash once (shared by
 * every field) — on a cold key it is a plain HGET. Each call is counted once, in the wrapper:
 * ioredis replaying queued commands on (re)connect does not go through it.
 * Not covered: commands with a callback argument, pipeline()/multi() and sendCommand()/call()
 * pass straight through (their writes are not invalidated).
 */
import type { Cluster, Redis } from 'ioredis';
import type { HotKeyClient } from './client.ts';
import { MAX_KEY_LENGTH } from './protocol.ts';

export interface WithHotKeysOptions {
  /** writes resolve after the hub acknowledged the invalidation cluster-wide (read-your-writes everywhere) @default true */
  awaitInvalidation?: boolean;
  /** hears invalidations that failed after a successful write (no hub, timeout); the local copy is dropped regardless @default ignore */
  onInvalidateError?: (error: unknown, key: string) => void;
}

/** Write commands and which arguments are keys. */
const FIRST = (args: readonly unknown[]) => args.slice(0, 1);
const ALL = (args: readonly unknown[]) => [...args];
const EVEN = (args: readonly unknown[]) => args.filter((_, i) => i % 2 === 0);
const FIRST_TWO = (args: readonly unknown[]) => args.slice(0, 2);
const WRITES: Record<string, (args: readonly unknown[]) => unknown[]> = {
  set: FIRST, setex: FIRST, psetex: FIRST, setnx: FIRST, getset: FIRST, getdel: FIRST, getex: FIRST,
  append: FIRST, setrange: FIRST, incr: FIRST, incrby: FIRST, incrbyfloat: FIRST, decr: FIRST, decrby: FIRST,
  expire: FIRST, pexpire: FIRST, expireat: FIRST, pexpireat: FIRST, persist: FIRST,
  hset: FIRST, hmset: FIRST, hsetnx: FIRST, hdel: FIRST, hincrby: FIRST, hincrbyfloat: FIRST,
  del: ALL, unlink: ALL, mset: EVEN, msetnx: EVEN, rename: FIRST_TWO, renamenx: FIRST_TWO,
};

type Tagged = { kind: 'string'; value: unknown } | { kind: 'hash'; value: Record<string, string> } | { kind: 'field'; field: string; value: unknown };

function keyOf(arg: unknown): string | undefined {
  const key = typeof arg === 'string' ? arg : Buffer.isBuffer(arg) ? arg.toString() : undefined;
  return key !== undefined && key.length > 0 && key.length <= MAX_KEY_LENGTH ? key : undefined;
}

type Method = (...args: unknown[]) => Promise<unknown>;

/** A view of `redis` (a `Redis` or a `Cluster` client) with hot-key caching on reads and invalidation on writes. */
export function withHotKeys<R extends Redis | Cluster>(redis: R, hk: HotKeyClient, options: WithHotKeysOptions = {}): R {
  const awaitInvalidation = options.awaitInvalidation ?? true;
  const onInvalidateError = options.onInvalidateError ?? (() => {});
  const call = (name: string, args: unknown[]): Promise<unknown> => (redis as unknown as Record<string, Method>)[name]!(...args);

  const reads: Record<string, Method> = {
    async get(...args) {
      const key = keyOf(args[0]);
      if (key === undefined || args.length !== 1) return call('get', args);
      const rec = (await hk.get(key, async (): Promise<Tagged> => ({ kind: 'string', value: await call('get', args) }))) as Tagged;
      return rec.kind === 'string' ? rec.value : call('get', args);
    },
    async hgetall(...args) {
      const key = keyOf(args[0]);
      if (key === undefined || args.length !== 1) return call('hgetall', args);
      const rec = (await hk.get(key, async (): Promise<Tagged> => ({ kind: 'hash', value: Object.freeze((await call('hgetall', args)) as Record<string, string>) }))) as Tagged;
      return rec.kind === 'hash' ? { ...rec.value } : call('hgetall', args);
    },
    async hget(...args) {
      const key = keyOf(args[0]);
      const field = typeof args[1] === 'string' ? args[1] : undefined;
      if (key === undefined || field === undefined || args.length !== 2) return call('hget', args);
      const rec = (await hk.get(key, async (): Promise<Tagged> => {
        // only a hot key's value is cached: then one HGETALL serves every field
        if (hk.isHot(key)) return { kind: 'hash', value: Object.freeze((await call('hgetall', [key])) as Record<string, string>) };
        return { kind: 'field', field, value: await call('hget', args) };
      })) as Tagged;
      if (rec.kind === 'hash') return Object.hasOwn(rec.value, field) ? rec.value[field] : null;
      if (rec.kind === 'field' && rec.field === field) return rec.value;
      return call('hget', args);
    },
  };

  const write = (name: string, keysOf: (args: readonly unknown[]) => unknown[]): Method =>
    async (...args) => {
      const result = await call(name, args);
      const keys = [...new Set(keysOf(args).map(keyOf).filter((k): k is string => k !== undefined))];
      const done = Promise.all(
        keys.map((key) =>
          hk.invalidate(key).catch((err: unknown) => {
            onInvalidateError(err, key);
          }),
        ),
      );
      if (awaitInvalidation) await done;
      return result;
    };

  const wrapped = new Map<string, Method>();
  return new Proxy(redis, {
    get(target, prop, receiver) {
      if (typeof prop !== 'string') return Reflect.get(target, prop, receiver);
      const cached = wrapped.get(prop);
      if (cached !== undefined) return cached;
      const read = reads[prop];
      const keysOf = Object.hasOwn(WRITES, prop) ? WRITES[prop] : undefined;
      if (read === undefined && keysOf === undefined) {
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      }
      const inner = read ?? write(prop, keysOf!);
      // callback style: pass straight through, uncounted
      const fn: Method = (...args) => (typeof args[args.length - 1] === 'function' ? call(prop, args) : inner(...args));
      wrapped.set(prop, fn);
      return fn;
    },
  });
}
