/**
 * A real redis-server beside a promoting hub (promoting-hub.ts): the fixture of the ioredis
 * adapter's tests that make keys hot by hand and count what Redis itself answered. `plain` is an
 * unwrapped client for setup and INFO; every client made with `client()` is disconnected at `close()`.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { promotingHub, type PromotingHub } from './promoting-hub.ts';
import { RedisServer } from './redis-server.ts';

export interface RedisHub extends PromotingHub {
  server: RedisServer;
  plain: Redis;
  /** a plain client of the server (one retry per request), disconnected at `close()` */
  client(options?: RedisOptions): Redis;
}

export async function redisHub(rules?: object[], prefix?: string): Promise<RedisHub> {
  const server = await RedisServer.start();
  const opened: Redis[] = [];
  const client = (options: RedisOptions = {}): Redis => {
    const c = new Redis(server.url, { maxRetriesPerRequest: 1, ...options });
    opened.push(c);
    return c;
  };
  let fixture: PromotingHub;
  try {
    fixture = await promotingHub(rules, prefix);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return {
    ...fixture,
    server,
    plain: client(),
    client,
    async close() {
      for (const c of opened) c.disconnect();
      await fixture.close();
      await server.stop();
    },
  };
}
