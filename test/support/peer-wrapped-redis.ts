/**
 * A plain and a wrapped ioredis client of one real redis-server, with a HotKeyClient whose hub is
 * a protocol peer (protocol-peer.ts) that promotes keys when told: the setup of the benchmarks
 * that time the wrapper's reads with no detection in the loop. Promotions last 10 minutes, so no
 * measurement outlives one.
 */
import { Redis } from 'ioredis';
import { HotKeyClient } from '@hotkey/sdk';
import type { withHotKeys as WithHotKeys } from '@hotkey/sdk/ioredis';
import { MsgType } from '@hotkey/sdk/protocol';
import { ProtocolPeer, type PeerSocket } from './protocol-peer.ts';
import { RedisServer } from './redis-server.ts';
import { waitFor } from './wait.ts';

const PROMOTION_MS = 600_000;

export interface PeerWrappedRedis {
  server: RedisServer;
  hk: HotKeyClient;
  plain: Redis;
  wrapped: Redis;
  /** promotes `keys` (cached, at 100,000/s) and resolves once `hk` holds every one hot */
  promote(keys: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * What `promote` does in both adapters' set-ups: the peer promotes each key (cached, at
 * 100,000/s, for PROMOTION_MS) and the call resolves once `hk` holds every one hot.
 */
export function promoter(sock: PeerSocket, hk: HotKeyClient): (keys: readonly string[]) => Promise<void> {
  let seq = 0;
  return async (keys) => {
    for (const key of keys)
      sock.send({
        t: MsgType.Promote,
        seq: ++seq,
        key,
        qps: 1e5,
        hotMs: PROMOTION_MS,
        cacheTtlMs: PROMOTION_MS,
        cache: true,
        at: 0,
      });
    await waitFor(`${keys.join(', ')} hot`, () => keys.every((key) => hk.isHot(key)), 5000);
  };
}

/**
 * @param wrap the `withHotKeys` to measure (another checkout's, for a before/after run)
 * @param [Client] the HotKeyClient class `wrap` goes with (the same build's)
 */
export async function peerWrappedRedis(
  wrap: typeof WithHotKeys,
  Client: typeof HotKeyClient = HotKeyClient,
): Promise<PeerWrappedRedis> {
  const server = await RedisServer.start();
  const peer = await new ProtocolPeer({ id: 'hub-bench' }).listen();
  const sockP = peer.nextSocket();
  const hk = new Client({ app: 'bench', hubs: peer.url, flushIntervalMs: 100 });
  const sock: PeerSocket = await sockP;
  await hk.ready({ signal: AbortSignal.timeout(5000) });
  const plain = new Redis(server.url);
  const wrapped = wrap(new Redis(server.url), hk);
  return {
    server,
    hk,
    plain,
    wrapped,
    promote: promoter(sock, hk),
    async close() {
      plain.disconnect();
      wrapped.disconnect();
      await hk.close();
      await peer.close();
      await server.stop();
    },
  };
}
