/**
 * The fixture of the SDK tests that need only a real redis-server and one ioredis client on it:
 * registers the suite's before / after hooks that start the server, hand the connected client to
 * the test file, and disconnect and stop it again.
 */
import type { Test } from 'uvu';
import { Redis, type RedisOptions } from 'ioredis';
import { RedisServer } from '../../../test/support/redis-server.ts';

export function withLiveRedis(suite: Test, use: (client: Redis) => void, options: RedisOptions = {}): void {
  let server: RedisServer | undefined;
  let client: Redis | undefined;
  suite.before(async () => {
    server = await RedisServer.start();
    client = new Redis(server.url, { maxRetriesPerRequest: 1, ...options });
    use(client);
  });
  suite.after(async () => {
    client?.disconnect();
    await server?.stop();
  });
}

/** `call` of a RESP2 client on the suite's redis-server: COMMAND's replies as flat arrays, as the tables' tests read them. */
export function withResp2Call(suite: Test): (command: string, ...args: (string | number)[]) => Promise<unknown> {
  let client: Redis | undefined;
  withLiveRedis(
    suite,
    (c) => {
      client = c;
    },
    { protocol: 2 },
  );
  return (command, ...args) => {
    if (client === undefined) throw new Error('withResp2Call: called before the suite started');
    return client.call(command, ...args);
  };
}
