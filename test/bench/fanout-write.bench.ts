/**
 * Benchmark 14 — the fan-out write path, A/B in one process: the hub's Broadcaster writing one
 * Promote-sized frame to N WebSocket connections (HubSocket, as the hub accepts them) through
 * `sendShared` (framed once, one plain write per socket) against the same Broadcaster with
 * sendShared hidden (ws.send per socket: framing, cork, writev), rounds alternating so load on the
 * box hits both alike. CPU per socket is split into user (the hub's JavaScript) and system (the
 * kernel's TCP; on loopback this includes the receiver's side of every segment).
 * The receivers are plain ws clients in a child process.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { WebSocket, WebSocketServer } from 'ws';
import { Broadcaster } from '../../hub/src/core/broadcaster.ts';
import type { Peer } from '../../hub/src/core/peer.ts';
import { HubSocket } from '../../hub/src/server/hub-socket.ts';
import { encode, MsgType } from '../../sdk/src/wire/protocol.ts';
import { benchMain, type BenchRow } from './harness.ts';

if (process.argv[2] === 'receivers') {
  // child: open `count` connections, 64 handshakes at a time, count what arrives
  const [url, count] = [process.argv[3]!, Number(process.argv[4])];
  let open = 0;
  const next = (i: number) => {
    if (i >= count) return;
    const ws = new WebSocket(url, { perMessageDeflate: false });
    ws.on('message', () => undefined);
    ws.on('error', () => undefined);
    ws.on('open', () => {
      if (++open === count) process.send?.('ready');
      next(i + 64);
    });
  };
  for (let i = 0; i < 64; i++) next(i);
} else {
  benchMain(async ({ quick }) => {
    const n = quick ? 1000 : 5000;
    const rounds = quick ? 6 : 20;
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, WebSocket: HubSocket });
    await once(wss, 'listening');
    const sockets: HubSocket[] = [];
    wss.on('connection', (ws: HubSocket) => sockets.push(ws));
    const child = fork(
      fileURLToPath(import.meta.url),
      ['receivers', `ws://127.0.0.1:${(wss.address() as { port: number }).port}`, String(n)],
      { execArgv: ['--conditions=@hotkey/source', '--import', 'tsx'] },
    );
    try {
      await once(child, 'message', { signal: AbortSignal.timeout(120_000) });
      const shared = new Broadcaster({ maxBufferedBytes: 8 << 20 });
      const plain = new Broadcaster({ maxBufferedBytes: 8 << 20 });
      for (const ws of sockets) {
        shared.peers.add(ws as unknown as Peer);
        // the same socket without sendShared: ws.send frames it per socket
        plain.peers.add({
          send: (d: Uint8Array) => ws.send(d),
          close: (c: number, r: string) => ws.close(c, r),
          get bufferedAmount() {
            return ws.bufferedAmount;
          },
        });
      }
      const cpu = { shared: [] as [number, number][], plain: [] as [number, number][] };
      for (let r = 0; r < rounds; r++) {
        const kind = r % 2 === 0 ? 'shared' : 'plain';
        const message = encode({
          t: MsgType.Promote,
          seq: r,
          key: `item:${r}:fan-out-write`,
          qps: 12_345,
          hotMs: 30_000,
          cacheTtlMs: 10_000,
          cache: true,
          at: Date.now(),
        });
        const b = kind === 'shared' ? shared : plain;
        const c0 = process.cpuUsage();
        b.sendShared(message);
        const c = process.cpuUsage(c0);
        cpu[kind].push([c.user / n, c.system / n]);
        await new Promise((res) => setTimeout(res, 300)); // the receivers drain
      }
      const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      const user = (k: 'shared' | 'plain') => median(cpu[k].map((x) => x[0]));
      const sys = (k: 'shared' | 'plain') => median(cpu[k].map((x) => x[1]));
      const bench = `14 fan-out write ${n.toLocaleString('en')} sockets`;
      const rows: BenchRow[] = [
        {
          bench,
          metric: 'hub CPU per socket, user (vs ws.send)',
          ours: user('shared'),
          baseline: user('plain'),
          unit: 'µs',
          better: 'lower',
          note: `median of ${rounds / 2} broadcasts each, alternating`,
        },
        {
          bench,
          metric: 'hub CPU per socket, system (vs ws.send)',
          ours: sys('shared'),
          baseline: sys('plain'),
          unit: 'µs',
          better: 'lower',
          note: 'kernel TCP; on loopback it includes the receiving side',
        },
      ];
      return rows;
    } finally {
      child.kill('SIGKILL');
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    }
  });
}
