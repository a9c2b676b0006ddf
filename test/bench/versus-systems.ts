/**
 * The systems the versus benchmark (versus.bench.ts) puts side by side, each behind one small store
 * interface so that the service (versus-service.worker.ts) runs the same code over every one. Each
 * keeps the items in the same redis-server, under key names of its own making (a library's prefix
 * in front of the item's key), and has one invalidation path that the benchmark can stall:
 *
 *   ioredis            plain ioredis 6, no cache: every read is a GET (nothing to invalidate)
 *   hotkey-ioredis     `withHotKeys(new Redis(url), hk)` (@hotkey/sdk/ioredis); path: the hub link
 *   hotkey-node-redis  `withHotKeys(createClient({ url }), hk)` (@hotkey/sdk/node-redis); path: the hub link
 *   node-redis-csc     node-redis 6 `{ RESP: 3, clientSideCache: {} }`, its defaults; path: its Redis
 *                      connection (the invalidation pushes arrive on it)
 *   bentocache         memory L1 + Redis L2 + Redis pub/sub bus; path: the bus connection
 *   cacheable          CacheableMemory primary + `@keyv/redis` secondary + CacheableSync over
 *                      `@qified/redis`; path: the sync connection
 *   cache-manager      v7, a CacheableMemory Keyv + a `@keyv/redis` Keyv; no path (no cross-instance
 *                      invalidation: a copy lives until its TTL)
 *
 * The bus of bentocache and cacheable is a redis-server of its own, so that a bus restart is a fault
 * apart from a Redis restart (as a hub restart is for hotkey). Every library is imported when a
 * system first needs it: a service process holds its own system's code only.
 */
import type { HotKeyClient } from '@hotkey/sdk';

export const SYSTEMS = [
  'ioredis',
  'hotkey-ioredis',
  'hotkey-node-redis',
  'node-redis-csc',
  'bentocache',
  'cacheable',
  'cache-manager',
] as const;
export type SystemName = (typeof SYSTEMS)[number];

/** The connection whose stall keeps a system's invalidations from one instance. */
export type InvalidationPath = 'hub' | 'redis' | 'bus' | undefined;

export const PATH_OF: Record<SystemName, InvalidationPath> = {
  ioredis: undefined,
  'hotkey-ioredis': 'hub',
  'hotkey-node-redis': 'hub',
  'node-redis-csc': 'redis',
  bentocache: 'bus',
  cacheable: 'bus',
  'cache-manager': undefined,
};

/** How each system is labelled on the page, with the version pinned in test/package.json. */
export const LABEL: Record<SystemName, string> = {
  ioredis: 'plain ioredis 6 (no cache)',
  'hotkey-ioredis': 'hotkey over ioredis',
  'hotkey-node-redis': 'hotkey over node-redis',
  'node-redis-csc': 'node-redis 6.3 clientSideCache',
  bentocache: 'bentocache 1.6 (memory + Redis L2 + Redis bus)',
  cacheable: 'cacheable 2.5 (memory + @keyv/redis, qified sync)',
  'cache-manager': 'cache-manager 7.2 (memory + @keyv/redis)',
};

/** A local copy's lifetime where a library asks for one (bentocache's applies to its L2 as well: long, so seeded items stay). */
export const LOCAL_TTL_MS = 30_000;
const BENTO_TTL = '10m';
/** local entries kept per instance where a library bounds them */
const LOCAL_ENTRIES = 10_000;

export interface Store {
  /** the item's value, or null when there is none */
  get(key: string): Promise<string | null>;
  /**
   * resolves when the system considers the write done (acknowledged): true, or false when it also
   * reported that other instances may not have heard of it (hotkey's `onInvalidateError`, called
   * before the write resolves: no hub, a timeout)
   */
  set(key: string, value: string): Promise<boolean>;
  /** writes many items the way the system stores them (before the load; not timed) */
  seed(entries: Array<[string, string]>): Promise<void>;
  /** values held in the process (its cache's entries; 0 without one, NaN where the library does not say) */
  entries(): number;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** the items' redis-server */
  redisUrl: string;
  /** where the invalidation path connects: the hub, the items' Redis or the bus (through the stall proxy on one instance) */
  pathUrl: string | undefined;
  app: string;
  instanceId: string;
}

const host = (url: string) => {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
};

/** Writes in batches of `inFlight`: seeding is not what is measured, but 10k sequential writes are slow. */
async function inBatches(entries: Array<[string, string]>, set: (k: string, v: string) => Promise<unknown>) {
  for (let i = 0; i < entries.length; i += 200) await Promise.all(entries.slice(i, i + 200).map(([k, v]) => set(k, v)));
}

/** hotkey's wrapper options: its defaults, and the keys whose invalidation failed noted in `into` */
const heard = (into: Set<string>) => ({ onInvalidateError: (_err: unknown, key: string) => void into.add(key) });

async function hotKeyClient(o: OpenOptions, entry: 'root' | 'node-redis'): Promise<HotKeyClient> {
  const { HotKeyClient } = entry === 'root' ? await import('@hotkey/sdk') : await import('@hotkey/sdk/node-redis');
  const hk = new HotKeyClient({ app: o.app, hubs: o.pathUrl!, instanceId: o.instanceId });
  hk.on('error', () => undefined);
  await hk.ready({ signal: AbortSignal.timeout(20_000) });
  return hk;
}

export async function openStore(system: SystemName, o: OpenOptions): Promise<Store> {
  switch (system) {
    case 'ioredis':
    case 'hotkey-ioredis': {
      const { Redis } = await import('ioredis');
      const hk = system === 'ioredis' ? undefined : await hotKeyClient(o, 'root');
      const plain = new Redis(o.redisUrl);
      plain.on('error', () => undefined);
      const unconfirmed = new Set<string>();
      const redis = hk ? (await import('@hotkey/sdk/ioredis')).withHotKeys(plain, hk, heard(unconfirmed)) : plain;
      await redis.ping();
      return {
        get: (key) => redis.get(key),
        set: async (key, value) => {
          unconfirmed.delete(key);
          await redis.set(key, value);
          return !unconfirmed.has(key);
        },
        seed: (entries) => inBatches(entries, (k, v) => redis.set(k, v)),
        entries: () => hk?.stats().cacheSize ?? 0,
        close: async () => {
          redis.disconnect();
          await hk?.close();
        },
      };
    }
    case 'hotkey-node-redis':
    case 'node-redis-csc': {
      const { createClient } = await import('redis');
      const csc = system === 'node-redis-csc';
      const url = csc ? o.pathUrl! : o.redisUrl;
      const plain = csc ? createClient({ url, RESP: 3, clientSideCache: {} }) : createClient({ url });
      plain.on('error', () => undefined);
      await plain.connect();
      const hk = csc ? undefined : await hotKeyClient(o, 'node-redis');
      const unconfirmed = new Set<string>();
      const client = hk ? (await import('@hotkey/sdk/node-redis')).withHotKeys(plain, hk, heard(unconfirmed)) : plain;
      return {
        get: (key) => client.get(key) as Promise<string | null>,
        set: async (key, value) => {
          unconfirmed.delete(key);
          await client.set(key, value);
          return !unconfirmed.has(key);
        },
        seed: (entries) => inBatches(entries, (k, v) => client.set(k, v)),
        entries: () => (hk ? hk.stats().cacheSize : (plain.clientSideCache?.size() ?? NaN)),
        close: async () => {
          await client.close();
          await hk?.close();
        },
      };
    }
    case 'bentocache': {
      const { BentoCache, bentostore } = await import('bentocache');
      const { memoryDriver } = await import('bentocache/drivers/memory');
      const { redisDriver, redisBusDriver } = await import('bentocache/drivers/redis');
      const bento = new BentoCache({
        default: 'items',
        ttl: BENTO_TTL,
        stores: {
          items: bentostore()
            .useL1Layer(memoryDriver({ maxItems: LOCAL_ENTRIES }))
            .useL2Layer(redisDriver({ connection: host(o.redisUrl) }))
            .useBus(redisBusDriver({ connection: host(o.pathUrl!) })),
        },
      });
      return {
        get: async (key) => ((await bento.get<string>({ key })) as string | undefined) ?? null,
        set: async (key, value) => {
          await bento.set({ key, value });
          return true;
        },
        seed: (entries) => inBatches(entries, (key, value) => bento.set({ key, value })),
        entries: () => NaN,
        close: () => bento.disconnectAll(),
      };
    }
    case 'cacheable': {
      const { Cacheable, CacheableMemory, Keyv } = await import('cacheable');
      const { default: KeyvRedis } = await import('@keyv/redis');
      const { RedisMessageProvider } = await import('@qified/redis');
      const memory = new CacheableMemory({ ttl: LOCAL_TTL_MS, lruSize: LOCAL_ENTRIES });
      const secondary = new KeyvRedis(o.redisUrl);
      secondary.on('error', () => undefined);
      const cache = new Cacheable({
        primary: new Keyv({ store: memory }),
        secondary,
        sync: { qified: new RedisMessageProvider({ uri: o.pathUrl! }) },
      });
      cache.on('error', () => undefined);
      return {
        get: async (key) => (await cache.get<string>(key)) ?? null,
        set: async (key, value) => {
          await cache.set(key, value);
          return true;
        },
        seed: (entries) => inBatches(entries, (k, v) => cache.secondary!.set(k, v)),
        entries: () => memory.size,
        close: () => cache.disconnect(),
      };
    }
    case 'cache-manager': {
      const { createCache } = await import('cache-manager');
      const { CacheableMemory, Keyv } = await import('cacheable');
      const { default: KeyvRedis } = await import('@keyv/redis');
      const memory = new CacheableMemory({ ttl: LOCAL_TTL_MS, lruSize: LOCAL_ENTRIES });
      const redis = new KeyvRedis(o.redisUrl);
      redis.on('error', () => undefined);
      const remote = new Keyv({ store: redis });
      remote.on('error', () => undefined);
      const cache = createCache({ stores: [new Keyv({ store: memory }), remote] });
      return {
        get: async (key) => (await cache.get<string>(key)) ?? null,
        set: async (key, value) => {
          await cache.set(key, value);
          return true;
        },
        seed: (entries) => inBatches(entries, (k, v) => remote.set(k, v)),
        entries: () => memory.size,
        close: () => cache.disconnect(),
      };
    }
  }
}
