/**
 * The fixture the adapters' wrapper tests share: a real redis-server, and a protocol peer standing
 * in for the hub with one HotKeyClient connected to it. The peer acks every invalidation at once,
 * broadcasting it back first as a hub would, so a wrapped write settles without a real hub.
 */
import { HotKeyClient } from '../client/client.ts';
import { MsgType } from '../wire/protocol.ts';
import { ProtocolPeer, type PeerSocket } from '../../../test/support/protocol-peer.ts';
import { waitFor } from '../../../test/support/wait.ts';
import { RedisServer } from '../../../test/support/redis-server.ts';

/** the Promote fields that make a key hot and cached for the whole test */
const HOT = { qps: 5000, hotMs: 60_000, cacheTtlMs: 60_000, cache: true, at: 0 };

export interface AckingPeer {
  server: RedisServer;
  peer: ProtocolPeer;
  /** the peer's side of hk's connection */
  sock: PeerSocket;
  hk: HotKeyClient;
  /** promotes `key` (on hk, or on another client `on` connected through `s`) and waits until it is hot */
  promote(key: string, on?: HotKeyClient, s?: PeerSocket): Promise<void>;
  /** demotes `key` on hk and waits until it is no longer hot */
  demote(key: string): Promise<void>;
  close(): Promise<void>;
}

/** Starts the fixture; `onAck` hears the key of every invalidation the peer acks, in order. */
export async function startAckingPeer(onAck?: (key: string) => void): Promise<AckingPeer> {
  const server = await RedisServer.start();
  const peer = await new ProtocolPeer({ id: 'hub-a' }).listen();
  const sockP = peer.nextSocket();
  const hk = new HotKeyClient({ app: 'shop', hubs: peer.url, flushIntervalMs: 10, invalidateTimeoutMs: 2000 });
  const sock = await sockP;
  await hk.ready({ signal: AbortSignal.timeout(3000) });
  let seq = 0;
  sock.ws.on('message', () => {
    for (;;) {
      const i = sock.received.findIndex((m) => m.t === MsgType.InvalidateRequest);
      if (i < 0) break;
      const req = sock.received.splice(i, 1)[0] as { id: number; key: string };
      onAck?.(req.key);
      sock.send({ t: MsgType.Invalidate, seq: ++seq, key: req.key });
      sock.send({ t: MsgType.Ack, id: req.id, seq, fenced: [], ms: 0 });
    }
  });
  return {
    server,
    peer,
    sock,
    hk,
    async promote(key, on = hk, s = sock) {
      s.send({ t: MsgType.Promote, seq: ++seq, key, ...HOT });
      await waitFor(`${key} hot`, () => on.isHot(key));
    },
    async demote(key) {
      sock.send({ t: MsgType.Demote, seq: ++seq, key });
      await waitFor(`${key} demoted`, () => !hk.isHot(key));
    },
    async close() {
      await hk.close();
      await peer.close();
      await server.stop();
    },
  };
}
