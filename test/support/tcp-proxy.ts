/**
 * A TCP proxy on 127.0.0.1:0 in front of one upstream port, for fault tests: `freeze()` stops
 * forwarding in both directions (bytes wait in the kernel buffers, the sockets stay open — a
 * partition that neither side can tell from a slow peer), `thaw()` resumes. Connections accepted
 * while frozen are held too. `holdReplies(port)` stops one connection's upstream-to-client
 * direction only (its requests still run upstream, their replies wait) until `releaseReplies()`;
 * `delivered(port)` counts the bytes a connection's client got. `drop()` destroys the connections
 * it carries (bytes held while frozen are lost, as when a server dies) and goes on accepting.
 * Every socket is destroyed on `close()`.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';

export class TcpProxy {
  readonly #server: Server;
  readonly #pairs = new Set<[Socket, Socket]>();
  /** pairs whose replies are held (holdReplies) */
  readonly #held = new Set<[Socket, Socket]>();
  /** bytes each client socket got from its upstream */
  readonly #delivered = new WeakMap<Socket, number>();
  #frozen = false;
  port = 0;

  private constructor(upstreamPort: () => number) {
    this.#server = createServer((client) => {
      const upstream = createConnection({ host: '127.0.0.1', port: upstreamPort() });
      const pair: [Socket, Socket] = [client, upstream];
      this.#pairs.add(pair);
      upstream.on('data', (d: Buffer) =>
        this.#delivered.set(upstream, (this.#delivered.get(upstream) ?? 0) + d.length),
      );
      client.pipe(upstream);
      upstream.pipe(client);
      const end = () => {
        this.#pairs.delete(pair);
        this.#held.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
      if (this.#frozen) this.#pause(pair);
    });
  }

  /** `upstreamPort` is read per connection, so a restarted upstream on a new port is followed. */
  static async start(upstreamPort: number | (() => number)): Promise<TcpProxy> {
    const proxy = new TcpProxy(typeof upstreamPort === 'number' ? () => upstreamPort : upstreamPort);
    proxy.#server.listen(0, '127.0.0.1');
    await once(proxy.#server, 'listening');
    proxy.port = (proxy.#server.address() as { port: number }).port;
    return proxy;
  }

  get frozen(): boolean {
    return this.#frozen;
  }

  freeze(): void {
    this.#frozen = true;
    for (const pair of this.#pairs) this.#pause(pair);
  }

  thaw(): void {
    this.#frozen = false;
    for (const [a, b] of this.#pairs) {
      a.pipe(b);
      b.pipe(a);
      a.resume();
      b.resume();
    }
  }

  /**
   * Holds the replies of the connection whose upstream socket has local port `port` (the `addr`
   * the upstream server lists for it, e.g. in Redis's CLIENT LIST): what its client sends still
   * goes through and runs, what comes back waits until `releaseReplies()`. False when no
   * connection has that port.
   */
  holdReplies(port: number): boolean {
    for (const pair of this.#pairs) {
      const [client, upstream] = pair;
      if (upstream.localPort !== port) continue;
      upstream.unpipe(client);
      upstream.pause();
      this.#held.add(pair);
      return true;
    }
    return false;
  }

  /** Lets the replies `holdReplies` held through, and those after them. */
  releaseReplies(): void {
    for (const [client, upstream] of this.#held) {
      upstream.pipe(client);
      upstream.resume();
    }
    this.#held.clear();
  }

  /** Bytes the connection whose upstream socket has local port `port` passed on to its client so far. */
  delivered(port: number): number {
    for (const [, upstream] of this.#pairs) if (upstream.localPort === port) return this.#delivered.get(upstream) ?? 0;
    return 0;
  }

  #pause([a, b]: [Socket, Socket]): void {
    // unpipe first: a pipe resumes its source on 'drain'
    a.unpipe(b);
    b.unpipe(a);
    a.pause();
    b.pause();
  }

  drop(): void {
    for (const [a, b] of this.#pairs) {
      a.destroy();
      b.destroy();
    }
    this.#pairs.clear();
  }

  async close(): Promise<void> {
    for (const [a, b] of this.#pairs) {
      a.destroy();
      b.destroy();
    }
    this.#pairs.clear();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
