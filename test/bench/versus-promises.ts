/**
 * What each system of the versus benchmark says of itself in its own documentation, quoted or closely
 * paraphrased with where it says it, for the comparison page (versus-page.ts) to set beside what was
 * measured. Text only: the figures come from the run.
 */
import type { SystemName } from './versus-systems.ts';

export interface Claim {
  /** what its documentation says about other instances seeing a write */
  says: string;
  source: { title: string; url: string };
  /** how it was set up here */
  setup: string;
}

export const PROMISES: Record<SystemName, Claim> = {
  ioredis: {
    says: 'No cache: every read is a GET at Redis, so a read after an acknowledged write sees it (the baseline).',
    source: { title: 'ioredis README', url: 'https://github.com/redis/ioredis#readme' },
    setup: '`new Redis(url)`; reads `get`, writes `set`.',
  },
  'hotkey-ioredis': {
    says: 'An acknowledgement never lies: once a wrapped write resolves, no instance serves the old value, not even one whose link to the hub is frozen (leases; the hub fences an instance that did not confirm by waiting out its lease before it acks).',
    source: { title: 'hotkey concepts, Consistency', url: 'concepts/consistency.md' },
    setup:
      '`withHotKeys(new Redis(url), hk)` with the SDK’s defaults; one hub process; rule `*`: 200 reads/s cluster-wide, local values kept 30 s.',
  },
  'hotkey-node-redis': {
    says: 'The same rule as over ioredis: a write resolves once every instance dropped the old value or was fenced.',
    source: { title: 'hotkey concepts, Consistency', url: 'concepts/consistency.md' },
    setup: '`withHotKeys(createClient({ url }), hk)` (`@hotkey/sdk/node-redis`), defaults; same hub and rule.',
  },
  'node-redis-csc': {
    says: '“Client Side Caching … enables clients to cache query results locally. The Redis server will notify the client when cached results are no longer valid.” Nothing is said about a read on another client right after a write.',
    source: {
      title: 'node-redis README, Client Side Caching',
      url: 'https://github.com/redis/node-redis#client-side-caching',
    },
    setup: '`createClient({ url, RESP: 3, clientSideCache: {} })`: its defaults (no TTL, no entry limit).',
  },
  bentocache: {
    says: '“In a multi-instance context, you can synchronize different local in-memory caches of your instances via a Bus like Redis … This method maintains cache integrity across multiple instances.” The bus is fire-and-forget pub/sub; a failed publish is retried from a queue.',
    source: { title: 'bentocache README, Two-levels / Retry queue', url: 'https://bentocache.dev/docs/multi-tier' },
    setup:
      '`bentostore().useL1Layer(memoryDriver({ maxItems: 10000 })).useL2Layer(redisDriver(…)).useBus(redisBusDriver(…))`, ttl 10 min; the bus on a redis-server of its own.',
  },
  cacheable: {
    says: '“Sync events are eventually consistent — there may be a small delay between when a value is set and when it appears in other instances.” A set publishes the value to the other instances’ primaries.',
    source: { title: 'cacheable README, CacheableSync', url: 'https://www.npmjs.com/package/cacheable' },
    setup:
      '`new Cacheable({ primary: Keyv(CacheableMemory({ ttl: 30 s, lruSize: 10000 })), secondary: new KeyvRedis(url), sync: { qified: new RedisMessageProvider(…) } })`; the sync on a redis-server of its own.',
  },
  'cache-manager': {
    says: '“Tiered caches, and a consistent interface.” It has no cross-instance invalidation: another instance’s memory store keeps its copy until the copy’s TTL.',
    source: { title: 'cache-manager README', url: 'https://www.npmjs.com/package/cache-manager' },
    setup:
      '`createCache({ stores: [Keyv(CacheableMemory({ ttl: 30 s, lruSize: 10000 })), Keyv(new KeyvRedis(url))] })`. Its `get` stops at the first store that has the key and does not copy a value found in Redis into memory, so an instance serves from memory only what it wrote itself.',
  },
};
