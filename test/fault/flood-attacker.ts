/**
 * A hostile SDK peer for the flood tests, run as its own process so that its CPU is not the
 * measuring process's: `node … flood-attacker.ts '<json>'` with {mode, url, app, seconds,
 * connections, threshold}. Prints `ATTACK_READY` once every connection is welcomed, floods until
 * `seconds` pass (or SIGTERM), then prints `ATTACK_DONE {json}` and exits.
 *
 *   promote    one connection reports 131,072 unique keys at the threshold, every 100 ms
 *   invalidate one connection pipelines InvalidateRequests as fast as its socket drains
 *   frames     `connections` connections pipeline valid ~900 KiB Report frames (count 1: no promotion)
 *   evict      one connection reports fresh unique keys at threshold − 1 (12,000 a frame) as fast as
 *              its socket drains: none is ever promoted, each one takes a slot of the key table
 *   evict-many the same from `connections` connections, paced: 250 keys a frame from each every
 *              100 ms (the table's pressure, not the intake's), all bound to `localAddress` (e.g.
 *              127.0.0.2: one remote address, apart from the legit SDKs')
 */
import { WebSocket } from 'ws';
import { decodeServerMessage, encode, MsgType, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';

interface AttackSpec {
  mode: 'promote' | 'invalidate' | 'frames' | 'evict' | 'evict-many';
  url: string;
  app: string;
  seconds: number;
  connections?: number;
  threshold?: number;
  /** the local address every connection is bound to @default the system's choice */
  localAddress?: string;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as AttackSpec;
const stats = {
  framesSent: 0,
  recordsSent: 0,
  requestsSent: 0,
  acks: 0,
  promotesReceived: 0,
  closeCodes: [] as number[],
  skippedRounds: 0,
};
const sockets: WebSocket[] = [];
/** unique keys per Report frame of the eviction flood */
const EVICT_FRAME_KEYS = 12_000;
/** unique keys per Report frame of each connection of the many-connection eviction flood, every EVICT_MANY_EVERY_MS */
const EVICT_MANY_FRAME_KEYS = 250;
const EVICT_MANY_EVERY_MS = 100;

function connect(instance: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    // a zero mask: ws skips masking, so the attacker spends its CPU on sending, not on XOR
    const ws = new WebSocket(spec.url, {
      perMessageDeflate: false,
      generateMask: (mask) => mask.fill(0),
      ...(spec.localAddress === undefined ? {} : { localAddress: spec.localAddress }),
    });
    const timer = setTimeout(() => reject(new Error('no Welcome within 10 s')), 10_000);
    ws.on('open', () =>
      ws.send(encode({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: spec.app, instance, sdk: 'flood-attacker' })),
    );
    ws.on('message', (data) => {
      const msg = decodeServerMessage(data as Buffer);
      if (msg.t === MsgType.Welcome) {
        clearTimeout(timer);
        resolve(ws);
      } else if (msg.t === MsgType.Ack) stats.acks++;
      else if (msg.t === MsgType.Promote) stats.promotesReceived++;
    });
    ws.on('close', (code) => stats.closeCodes.push(code));
    ws.on('error', () => {});
  });
}

function reportFrame(keys: string[], count: number): Uint8Array {
  return encode({ t: MsgType.Report, keys, counts: keys.map(() => count) });
}

let stopAt = Number.POSITIVE_INFINITY;
let stopped = false;

function finish(): void {
  if (stopped) return;
  stopped = true;
  for (const ws of sockets) ws.terminate();
  process.stdout.write(`ATTACK_DONE ${JSON.stringify(stats)}\n`);
  setTimeout(() => process.exit(0), 50);
}
process.on('SIGTERM', finish);

async function main(): Promise<void> {
  const n = spec.mode === 'frames' || spec.mode === 'evict-many' ? (spec.connections ?? 48) : 1;
  for (let i = 0; i < n; i++) sockets.push(await connect(`attacker-${process.pid}-${i}`));
  const frames =
    spec.mode === 'frames'
      ? Array.from({ length: 8 }, (_, f) =>
          reportFrame(
            Array.from({ length: 65_536 }, (_, i) => `f${f}:${i.toString(36).padStart(8, '0')}`),
            1,
          ),
        )
      : [];
  stopAt = Date.now() + spec.seconds * 1000;
  process.stdout.write('ATTACK_READY\n');
  if (spec.mode === 'promote') {
    const keys = Array.from({ length: 131_072 }, (_, i) => `junk:${i}`);
    const frames = [
      reportFrame(keys.slice(0, 65_536), spec.threshold ?? 1000),
      reportFrame(keys.slice(65_536), spec.threshold ?? 1000),
    ];
    const ws = sockets[0]!;
    const round = () => {
      if (stopped || Date.now() >= stopAt) return finish();
      if (ws.readyState !== WebSocket.OPEN) return finish();
      if (ws.bufferedAmount > 8 * 1024 * 1024) stats.skippedRounds++;
      else
        for (const f of frames) {
          ws.send(f);
          stats.framesSent++;
          stats.recordsSent += 65_536;
        }
      setTimeout(round, 100);
    };
    round();
  } else if (spec.mode === 'invalidate') {
    const batch = Array.from({ length: 1000 }, (_, i) =>
      encode({ t: MsgType.InvalidateRequest, id: i + 1, key: `inv:${i}` }),
    );
    const ws = sockets[0]!;
    const pump = () => {
      if (stopped || Date.now() >= stopAt || ws.readyState !== WebSocket.OPEN) return finish();
      if (ws.bufferedAmount < 1024 * 1024) {
        for (const f of batch) ws.send(f);
        stats.requestsSent += batch.length;
        stats.framesSent += batch.length;
      }
      setImmediate(pump);
    };
    pump();
  } else if (spec.mode === 'evict') {
    const ws = sockets[0]!;
    const count = Math.max(1, (spec.threshold ?? 1000) - 1);
    const counts = new Array<number>(EVICT_FRAME_KEYS).fill(count);
    let next = 0;
    const pump = () => {
      if (stopped || Date.now() >= stopAt || ws.readyState !== WebSocket.OPEN) return finish();
      if (ws.bufferedAmount < 2 * 1024 * 1024) {
        const keys = Array.from({ length: EVICT_FRAME_KEYS }, () => `ev:${(next++).toString(36)}`);
        ws.send(encode({ t: MsgType.Report, keys, counts }));
        stats.framesSent++;
        stats.recordsSent += EVICT_FRAME_KEYS;
        setImmediate(pump);
      } else setTimeout(pump, 2);
    };
    pump();
  } else if (spec.mode === 'evict-many') {
    const count = Math.max(1, (spec.threshold ?? 1000) - 1);
    const counts = new Array<number>(EVICT_MANY_FRAME_KEYS).fill(count);
    let next = 0;
    const pump = () => {
      if (stopped || Date.now() >= stopAt) return finish();
      let open = 0;
      for (const ws of sockets) {
        if (ws.readyState !== WebSocket.OPEN) continue;
        open++;
        if (ws.bufferedAmount >= 512 * 1024) continue;
        const keys = Array.from({ length: EVICT_MANY_FRAME_KEYS }, () => `em:${(next++).toString(36)}`);
        ws.send(encode({ t: MsgType.Report, keys, counts }));
        stats.framesSent++;
        stats.recordsSent += EVICT_MANY_FRAME_KEYS;
      }
      if (open === 0) return finish();
      setTimeout(pump, EVICT_MANY_EVERY_MS);
    };
    pump();
  } else {
    const pump = () => {
      if (stopped || Date.now() >= stopAt) return finish();
      let open = 0;
      sockets.forEach((ws, c) => {
        if (ws.readyState !== WebSocket.OPEN) return;
        open++;
        if (ws.bufferedAmount < 2 * 1024 * 1024) {
          ws.send(frames[(c + stats.framesSent) % frames.length]!);
          stats.framesSent++;
          stats.recordsSent += 65_536;
        }
      });
      if (open === 0) return finish();
      setTimeout(pump, 5);
    };
    pump();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`attacker failed: ${(err as Error).stack ?? String(err)}\n`);
  finish();
});
