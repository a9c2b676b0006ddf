/**
 * A frozen tracking link: the wrapped client (and so its tracking connections) reaches
 * redis-server through a TCP proxy that stops moving bytes without closing anything. Writes made
 * meanwhile cannot be heard; the heartbeat must notice within `deadMs` + `pingMs` and drop what
 * that node's session vouched for; after the thaw, tracking comes back and writes are heard again.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { MsgType } from '../../sdk/src/wire/protocol.ts';
import { ProtocolPeer } from '../support/protocol-peer.ts';
import { RedisServer } from '../support/redis-server.ts';
import { readsNew, warm } from '../support/staleness.ts';
import { waitFor, within } from '../support/wait.ts';

/** A TCP proxy to 127.0.0.1:`port` whose every connection can be frozen (paused both ways) and thawed. */
class FreezableProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #frozen = false;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(port: number): Promise<FreezableProxy> {
    const server = createServer();
    const proxy = new FreezableProxy(server);
    server.on('connection', (client) => {
      const upstream = connect(port, '127.0.0.1');
      for (const [a, b] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        proxy.#sockets.add(a);
        a.pipe(b);
        a.on('error', () => b.destroy());
        a.on('close', () => {
          proxy.#sockets.delete(a);
          b.destroy();
        });
      }
      if (proxy.#frozen) {
        client.pause();
        upstream.pause();
      }
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return proxy;
  }

  get port(): number {
    return (this.#server.address() as { port: number }).port;
  }

  freeze(): void {
    this.#frozen = true;
    for (const s of this.#sockets) s.pause();
  }

  thaw(): void {
    this.#frozen = false;
    for (const s of this.#sockets) s.resume();
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

test('a frozen tracking link drops the values it vouched for within deadMs + pingMs; tracking returns after the thaw', async () => {
  const server = await RedisServer.start();
  const proxy = await FreezableProxy.start(server.port);
  const peer = await new ProtocolPeer({ id: 'hub-freeze' }).listen();
  const sockP = peer.nextSocket();
  const hk = new HotKeyClient({ app: 'shop', hubs: peer.url, flushIntervalMs: 20 });
  const outside = new Redis(server.url);
  const faults: string[] = [];
  const redis = withHotKeys(new Redis({ host: '127.0.0.1', port: proxy.port, maxRetriesPerRequest: 1 }), hk, {
    tracking: { pingMs: 100, deadMs: 300, onError: (e) => faults.push(e.message) },
  });
  try {
    const sock = await within('the SDK to connect', sockP, 5000);
    await hk.ready({ signal: AbortSignal.timeout(5000) });
    await outside.set('fz:k', 'v0');
    sock.send({
      t: MsgType.Promote,
      seq: 1,
      key: 'fz:k',
      qps: 1,
      hotMs: 600_000,
      cacheTtlMs: 600_000,
      cache: true,
      at: 0,
    });
    await waitFor('fz:k hot', () => hk.isHot('fz:k'));
    await warm({ hk, redis }, 'fz:k');
    assert.is(hk.stats().cacheSize, 1);

    proxy.freeze();
    const frozenAt = performance.now();
    await outside.set('fz:k', 'written-while-frozen'); // nobody can tell the wrapper
    await waitFor("the frozen node's value dropped", () => hk.stats().cacheSize === 0, 2000, 5);
    const droppedAfter = performance.now() - frozenAt;
    // deadMs + pingMs = 400 ms; the bound is generous for a loaded box
    console.log(`# frozen link: value dropped ${droppedAfter.toFixed(0)} ms after the freeze (deadMs 300, pingMs 100)`);
    assert.ok(droppedAfter < 1500, `dropped ${droppedAfter.toFixed(0)} ms after the freeze`);
    assert.ok(
      faults.some((m) => m.includes('silent')),
      'the heartbeat said why',
    );

    proxy.thaw();
    assert.is(await redis.get('fz:k'), 'written-while-frozen');
    await warm({ hk, redis }, 'fz:k', 5000);
    await outside.set('fz:k', 'after-thaw');
    await readsNew({ hk, redis }, 'fz:k', 'after-thaw', 2000);
  } finally {
    outside.disconnect();
    redis.disconnect();
    await hk.close();
    await peer.close();
    await proxy.close();
    await server.stop();
  }
});

test.run();
