/**
 * What every guide test starts: a redis-server and a hub in this process for the file, and a plain
 * ioredis probe that counts the commands Redis executed. The hub's one rule makes a key read a few
 * hundred times a second hot within a window, and keeps it hot and cached for the whole file.
 *
 *   const fx = guideFixture(test);
 *   test('…', async () => { const a = await openPrices(fx.redisUrl, fx.hubUrl); … });
 */
import type { Test } from 'uvu';
import { Redis } from 'ioredis';
import { hubInProcess } from '../support/e2e.ts';
import { RedisServer } from '../support/redis-server.ts';
import { redisCommands } from './guarantees.ts';

export const RULES = [{ match: '*', threshold: 20, windowMs: 1000, hotMs: 600_000, cacheTtlMs: 600_000 }];

export interface GuideFixture {
  readonly redisUrl: string;
  readonly hubUrl: string;
  readonly redis: RedisServer;
  /** commands Redis executed so far (the probe's INFO and heartbeat PINGs aside) */
  commands(): Promise<number>;
  /** closes `close` at the end of the file, before the hub and Redis stop (the last given first) */
  defer(close: () => unknown): void;
}

export function guideFixture(suite: Test): GuideFixture {
  const e2e = hubInProcess(suite, { config: { apps: { shop: { rules: RULES } } } });
  let server: RedisServer | undefined;
  let probe: Redis | undefined;
  const deferred: Array<() => unknown> = [];
  suite.before(async () => {
    server = await RedisServer.start();
    probe = new Redis(server.url);
  });
  suite.after(async () => {
    for (const close of deferred.splice(0).reverse()) await close();
    probe?.disconnect();
    await server?.stop();
  });
  return {
    get redisUrl() {
      return server!.url;
    },
    get hubUrl() {
      return e2e.hub.url;
    },
    get redis() {
      return server!;
    },
    commands: () => redisCommands(probe!)(),
    defer: (close) => void deferred.push(close),
  };
}
