/**
 * The node-redis sibling of peer-wrapped-redis.ts: a plain and a wrapped node-redis client of one
 * real redis-server, with a HotKeyClient whose hub is a protocol peer that promotes keys when
 * told, for the benchmarks that time the adapter's reads with no detection in the loop.
 * Promotions last 10 minutes, so no measurement outlives one.
 */
import { createClient } from 'redis';
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/node-redis';
import { ProtocolPeer, type PeerSocket } from './protocol-peer.ts';
import { RedisServer } from './redis-server.ts';
import { promoter } from './peer-wrapped-redis.ts';

const connectTo = (url: string) => createClient({ url });
type NodeRedisClient = ReturnType<typeof connectTo>;

export interface PeerWrappedNodeRedis {
  server: RedisServer;
  hk: HotKeyClient;
  plain: NodeRedisClient;
  wrapped: NodeRedisClient;
  /** promotes `keys` (cached, at 100,000/s) and resolves once `hk` holds every one hot */
  promote(keys: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * @param [wrap] the adapter's `withHotKeys` to measure (a build's, for the price a user pays)
 * @param [Client] the HotKeyClient class `wrap` goes with (the same build's)
 */
export async function peerWrappedNodeRedis(
  wrap: typeof withHotKeys = withHotKeys,
  Client: typeof HotKeyClient = HotKeyClient,
): Promise<PeerWrappedNodeRedis> {
  const server = await RedisServer.start();
  const peer = await new ProtocolPeer({ id: 'hub-bench' }).listen();
  const sockP = peer.nextSocket();
  const hk = new Client({ app: 'bench', hubs: peer.url, flushIntervalMs: 100 });
  const plain = connectTo(server.url);
  const wrapped = wrap(connectTo(server.url), hk);
  const close = async () => {
    await plain.close().catch(() => undefined);
    await wrapped.close().catch(() => undefined);
    await hk.close();
    await peer.close();
    await server.stop();
  };
  try {
    const sock: PeerSocket = await sockP;
    await hk.ready({ signal: AbortSignal.timeout(5000) });
    await plain.connect();
    await wrapped.connect();
    return {
      server,
      hk,
      plain,
      wrapped,
      promote: promoter(sock, hk),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
