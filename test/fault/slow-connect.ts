/**
 * Fault injection inside one checker worker: every connection this process opens to one TCP port
 * goes through a local relay that holds it for `ms` before connecting on (the socket opens, but
 * the WebSocket upgrade and the SDK's Hello wait). Models an instance that is slow to reach a hub
 * that just joined while its other links work. `ws` opens its sockets with `net.connect` looked up
 * at call time, so replacing that one function on the shared `node:net` module reaches it.
 */
import net from 'node:net';
import { once } from 'node:events';

let relay: net.Server | undefined;
const sockets = new Set<net.Socket>();

export async function slowConnectsTo(port: number, ms: number): Promise<void> {
  if (relay !== undefined) throw new Error('slowConnectsTo: one slow port per process');
  const connect = net.connect;
  const direct = (p: number) => connect({ host: '127.0.0.1', port: p });
  relay = net.createServer((client) => {
    sockets.add(client);
    client.pause();
    client.on('error', () => client.destroy()).on('close', () => sockets.delete(client));
    const timer = setTimeout(() => {
      if (client.destroyed) return;
      const upstream = direct(port);
      sockets.add(upstream);
      const end = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(upstream);
      };
      upstream.on('error', end).on('close', end);
      client.on('close', end);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    }, ms);
    client.on('close', () => clearTimeout(timer));
  });
  relay.listen(0, '127.0.0.1');
  await once(relay, 'listening');
  const relayPort = (relay.address() as net.AddressInfo).port;
  relay.unref();
  (net as { connect: unknown }).connect = (...args: unknown[]) => {
    const opts = args[0];
    if (typeof opts === 'object' && opts !== null && Number((opts as { port?: unknown }).port) === port)
      return connect({ ...(opts as net.TcpNetConnectOpts), port: relayPort });
    return (connect as (...a: unknown[]) => net.Socket)(...args);
  };
}
