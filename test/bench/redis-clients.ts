/**
 * The Redis clients the side-by-side benchmark (node-redis.bench.ts) compares, behind one small
 * interface so that every load runs the same code against each:
 *
 *   ioredis                plain ioredis 6 (the heap baseline of ioredis + hotkey)
 *   ioredis+hotkey         `withHotKeys(new Redis(url), hk)` (@hotkey/sdk/ioredis)
 *   node-redis             plain node-redis (`createClient({ url })`; RESP3, v6's default)
 *   node-redis+hotkey      `withHotKeys(createClient({ url }), hk)` (@hotkey/sdk/node-redis)
 *   …+hotkey+bcast         either hotkey variant with `tracking: { prefixes: [''] }`: Redis tracks
 *                          every key for it by broadcast (no per-key items; every write pushed), so a
 *                          surge's first read answers the key's load (client/read/recent-reads.ts) — set
 *                          up with no idea which key will surge, as clientSideCache is
 *   node-redis+csc         node-redis's own client-side cache: `{ RESP: 3, clientSideCache: {} }`
 *                          with its defaults (no TTL, no entry limit)
 *   node-redis+hk.get      plain node-redis read through `hk.get(key, loader)` by hand, writes
 *                          followed by `hk.invalidate(key)`: what a node-redis service can do
 *                          without an adapter (the SDK's own cost, measured apart from any adapter)
 *
 * The node-redis adapter is loaded by name at run time (test/support/node-redis-adapter.ts): where it
 * is not built yet, `adapterMissing()` says why and the benchmark reports that column as skipped.
 *
 * Each library is imported when a variant first needs it, not by this module: a process of a plain
 * variant then holds its own client library only, as a service without hotkey does, so the heap
 * compared with it counts the SDK's code as well as its state.
 */
import type { HotKeyClient } from '@hotkey/sdk';
import type { Redis } from 'ioredis';
import type { createClient } from 'redis';
import { loadNodeRedisAdapter, nodeRedisAdapterMissing } from '../support/node-redis-adapter.ts';

export const VARIANTS = [
  'ioredis',
  'ioredis+hotkey',
  'ioredis+hotkey+bcast',
  'node-redis',
  'node-redis+hotkey',
  'node-redis+hotkey+bcast',
  'node-redis+csc',
  'node-redis+hk.get',
] as const;
export type Variant = (typeof VARIANTS)[number];

/** The same client library without any cache: what a variant's heap is compared with. */
export function plainOf(variant: Variant): Variant {
  return variant.startsWith('ioredis') ? 'ioredis' : 'node-redis';
}

export interface BenchClient {
  get(key: string): Promise<string | null>;
  set(key: string, value: string): Promise<unknown>;
  /** values held in the process for this client (its cache's entries; 0 without one) */
  cacheEntries(): number;
  close(): Promise<void>;
}

export interface OpenOptions {
  redisUrl: string;
  hubUrl: string;
  app: string;
  instanceId: string;
}

type NodeRedisClient = ReturnType<typeof createClient>;

/**
 * A client's failure named by its class, its code and its message: some have no message
 * (node-redis's TimeoutError, when a command outlives its 5 s default timeout).
 */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const kind = err.constructor?.name && err.constructor.name !== 'Error' ? err.constructor.name : err.name;
  const code = (err as { code?: unknown }).code;
  return [kind, code === undefined ? '' : String(code), err.message].filter((x) => x !== '').join(': ');
}

/** Why the node-redis + hotkey column cannot run here, or undefined when it can. */
export const adapterMissing = nodeRedisAdapterMissing;

/**
 * A HotKeyClient from the entry the service imports: a node-redis service imports it from
 * `@hotkey/sdk/node-redis` and so never loads the root entry (which re-exports the ioredis adapter).
 */
async function hotKeyClient(o: OpenOptions, entry: 'root' | 'node-redis' = 'root'): Promise<HotKeyClient> {
  const { HotKeyClient } = entry === 'root' ? await import('@hotkey/sdk') : await import('@hotkey/sdk/node-redis');
  const hk = new HotKeyClient({ app: o.app, hubs: o.hubUrl, instanceId: o.instanceId });
  hk.on('error', () => undefined);
  await hk.ready({ signal: AbortSignal.timeout(15_000) });
  return hk;
}

async function nodeRedis(url: string, csc: boolean): Promise<NodeRedisClient> {
  const { createClient } = await import('redis');
  const client = csc ? createClient({ url, RESP: 3, clientSideCache: {} }) : createClient({ url });
  client.on('error', () => undefined);
  await client.connect();
  return client as NodeRedisClient;
}

/** The wrapper's options of a hotkey variant: its defaults, or every key tracked by broadcast. */
function wrapOptions(variant: Variant): { tracking?: { prefixes: string[] } } {
  return variant.endsWith('+bcast') ? { tracking: { prefixes: [''] } } : {};
}

export async function openClient(variant: Variant, o: OpenOptions): Promise<BenchClient> {
  switch (variant) {
    case 'ioredis':
    case 'ioredis+hotkey':
    case 'ioredis+hotkey+bcast': {
      const hk = variant === 'ioredis' ? undefined : await hotKeyClient(o);
      const plain: Redis = new (await import('ioredis')).Redis(o.redisUrl);
      plain.on('error', () => undefined);
      const redis = hk ? (await import('@hotkey/sdk/ioredis')).withHotKeys(plain, hk, wrapOptions(variant)) : plain;
      await redis.ping();
      return {
        get: (key) => redis.get(key),
        set: (key, value) => redis.set(key, value),
        cacheEntries: () => hk?.stats().cacheSize ?? 0,
        close: async () => {
          redis.disconnect();
          await hk?.close();
        },
      };
    }
    case 'node-redis':
    case 'node-redis+csc': {
      const client = await nodeRedis(o.redisUrl, variant === 'node-redis+csc');
      return {
        get: (key) => client.get(key) as Promise<string | null>,
        set: (key, value) => client.set(key, value),
        cacheEntries: () => client.clientSideCache?.size() ?? 0,
        close: () => client.close(),
      };
    }
    case 'node-redis+hotkey':
    case 'node-redis+hotkey+bcast': {
      const a = await loadNodeRedisAdapter();
      if (a instanceof Error) throw a;
      const hk = await hotKeyClient(o, 'node-redis');
      const client = a.withHotKeys(await nodeRedis(o.redisUrl, false), hk, wrapOptions(variant));
      return {
        get: (key) => client.get(key) as Promise<string | null>,
        set: (key, value) => client.set(key, value),
        cacheEntries: () => hk.stats().cacheSize,
        close: async () => {
          await client.close();
          await hk.close();
        },
      };
    }
    case 'node-redis+hk.get': {
      const hk = await hotKeyClient(o);
      const client = await nodeRedis(o.redisUrl, false);
      return {
        get: (key) => hk.get(key, () => client.get(key) as Promise<string | null>),
        set: async (key, value) => {
          await client.set(key, value);
          await hk.invalidate(key);
        },
        cacheEntries: () => hk.stats().cacheSize,
        close: async () => {
          await client.close();
          await hk.close();
        },
      };
    }
  }
}
