/**
 * Benchmark 14 — the fan-out write path, A/B in one process: the hub's Broadcaster writing one
 * Promote-sized frame to N WebSocket connections (HubSocket, as the hub accepts them) through
 * `sendBroadcast` (framed once, one plain write per socket) against the same Broadcaster with
 * sendBroadcast hidden (ws.send per socket: framing, cork, writev), rounds alternating so load on the
 * box hits both alike. CPU per socket is split into user (the hub's JavaScript) and system (the
 * kernel's TCP; on loopback this includes the receiver's side of every segment).
 * The receivers are plain ws clients in a child process.
 *
 * Third, the same Broadcaster with fan-out threads (server/fanout-threads.ts: helper threads
 * write shares of the sockets while the event loop writes its own): the broadcast's wall time
 * against the event loop alone. The receivers are stopped (SIGSTOP) during every write and resumed
 * after it, so that the box's two cores are the writers' and the time is the hub's: on loopback
 * the kernel queues each segment into the stopped receiver's socket as it is written.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { WebSocket, WebSocketServer } from 'ws';
import { Broadcaster } from '../../hub/src/core/broadcast/broadcaster.ts';
import { DEFAULT_TUNABLES } from '../../hub/src/core/tunables.ts';
import type { Peer } from '../../hub/src/core/peer.ts';
import { HubSocket } from '../../hub/src/server/hub-socket.ts';
import { FanoutThreads } from '../../hub/src/server/fanout-threads.ts';
import { encode, MsgType } from '../../sdk/src/wire/protocol.ts';
import { benchMain, type BenchRow } from './harness.ts';
import { delay } from '../support/wait.ts';

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
    const rounds = quick ? 6 : 30;
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, WebSocket: HubSocket });
    await once(wss, 'listening');
    const sockets: HubSocket[] = [];
    let pool: FanoutThreads | undefined;
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
      pool = new FanoutThreads({ threads: DEFAULT_TUNABLES.fanoutThreads, minSockets: 1 });
      const threaded = new Broadcaster({ maxBufferedBytes: 8 << 20, bulk: pool });
      await pool.start();
      for (const ws of sockets) {
        shared.peers.add(ws as unknown as Peer);
        threaded.peers.add(ws as unknown as Peer);
        // the same socket without sendBroadcast: ws.send frames it per socket
        plain.peers.add({
          send: (d: Uint8Array) => ws.send(d),
          close: (c: number, r: string) => ws.close(c, r),
          get bufferedAmount() {
            return ws.bufferedAmount;
          },
        });
      }
      const kinds = ['shared', 'plain', 'threaded'] as const;
      const cpu = {
        shared: [] as [number, number][],
        plain: [] as [number, number][],
        threaded: [] as [number, number][],
      };
      const wall = { shared: [] as number[], plain: [] as number[], threaded: [] as number[] };
      for (let r = -1; r < rounds; r++) {
        // round -1 warms the threaded path up, uncounted
        const kind = r < 0 ? 'threaded' : kinds[r % kinds.length]!;
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
        const b = kind === 'shared' ? shared : kind === 'plain' ? plain : threaded;
        child.kill('SIGSTOP');
        await delay(20);
        const c0 = process.cpuUsage(); // every thread of the process
        const t0 = performance.now();
        b.sendBroadcast(message);
        const t = performance.now() - t0;
        const c = process.cpuUsage(c0);
        child.kill('SIGCONT');
        if (r >= 0) {
          cpu[kind].push([c.user / n, c.system / n]);
          wall[kind].push(t);
        }
        await delay(300); // the receivers drain
      }
      const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      const user = (k: (typeof kinds)[number]) => median(cpu[k].map((x) => x[0]));
      const sys = (k: (typeof kinds)[number]) => median(cpu[k].map((x) => x[1]));
      const bench = `14 fan-out write ${n.toLocaleString('en')} sockets`;
      const rows: BenchRow[] = [
        {
          bench,
          metric: 'hub CPU per socket, user (vs ws.send)',
          ours: user('shared'),
          baseline: user('plain'),
          unit: 'µs',
          better: 'lower',
          note: `median of ${rounds / 3} broadcasts each, alternating`,
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
        {
          bench,
          metric: 'broadcast wall time, fan-out threads (vs event loop alone)',
          ours: median(wall.threaded),
          baseline: median(wall.shared),
          unit: 'ms',
          better: 'lower',
          note: `${pool.threads} helper thread(s) + the event loop; receivers stopped during the write; median of ${rounds / 3} each`,
        },
        {
          bench,
          metric: 'hub CPU per socket, fan-out threads (vs event loop alone)',
          ours: user('threaded') + sys('threaded'),
          baseline: user('shared') + sys('shared'),
          unit: 'µs',
          better: 'lower',
          note: 'user + system, all threads',
        },
      ];
      return rows;
    } finally {
      await pool?.close();
      child.kill('SIGKILL');
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    }
  });
}
