/**
 * Load generator for the ingest benchmark, one per process: opens SDK connections and writes
 * pre-encoded Report frames as fast as each socket drains (bounded by `HIGH_WATER` queued bytes),
 * then sends an in-order barrier (msgpack Resync, answered by a Snapshot; JSON ping/pong for the
 * naive hub) and reports when the server had absorbed everything it sent.
 *
 *   <- { type: 'start', url, protocol: 'msgpack' | 'json', connections, seed, distinct?, rate?, planted? }
 *   -> { type: 'ready' }
 *   <- { type: 'go', durationMs }
 *   -> { type: 'done', records, startedAt, drainedAt, closedEarly, sawPlanted }
 *
 * Default: a pool of frames over 50k Zipf keys, sent flat out. `distinct`: every record a key
 * never sent before (a cardinality flood), at `rate` records/s, with `planted.key` riding along at
 * `planted.perSecond`; `sawPlanted` says whether the server broadcast a promotion of it.
 */
import WebSocket from 'ws';
import { once } from 'node:events';
import { decodeFrame, encode, MsgType, PROTOCOL_VERSION } from '../../sdk/src/protocol.ts';
import { fromParent, toParent } from './harness.ts';
import { ZipfSampler, mulberry32 } from './zipf.ts';

/** records per Report frame: a busy instance's flush */
export const RECORDS_PER_FRAME = 500;
const FRAMES = 64;
const KEYS = 50_000;
const HIGH_WATER = 1 << 20;

interface Start {
  url: string;
  protocol: 'msgpack' | 'json';
  connections: number;
  seed: number;
  distinct?: boolean;
  /** records/s over all this process's connections; 0 or absent: as fast as the sockets drain */
  rate?: number;
  planted?: { key: string; perSecond: number };
}

const start = await fromParent<Start>('start', 30_000);
const zipf = new ZipfSampler({ n: KEYS, s: 1.1, seed: start.seed });
const random = mulberry32(start.seed + 1);
const frames: (Uint8Array | string)[] = [];
for (let f = 0; f < FRAMES; f++) {
  const keys: string[] = [];
  const counts: number[] = [];
  for (let i = 0; i < RECORDS_PER_FRAME; i++) {
    keys.push(`item:${zipf.next()}`);
    counts.push(1 + Math.floor(random() * 5));
  }
  if (start.protocol === 'msgpack') frames.push(encode({ t: MsgType.Report, keys, counts }));
  else {
    // the naive client's shape: one object of key -> count (duplicates in a frame merge, as a Map would)
    const map: Record<string, number> = {};
    keys.forEach((k, i) => (map[k] = (map[k] ?? 0) + counts[i]!));
    frames.push(JSON.stringify({ type: 'report', keys: map }));
  }
}
// records per frame as the server will count them (JSON merges duplicate keys)
const recordsOf = frames.map((f) => (typeof f === 'string' ? Object.keys((JSON.parse(f) as { keys: object }).keys).length : RECORDS_PER_FRAME));

let floodSeq = 0;
/** A frame of never-seen keys (plus the planted key's share); returns [frame, records]. */
function distinctFrame(): [Uint8Array | string, number] {
  const keys: string[] = [];
  const counts: number[] = [];
  for (let i = 0; i < RECORDS_PER_FRAME; i++) {
    keys.push(`flood:${process.pid}:${floodSeq++}`);
    counts.push(1);
  }
  if (start.planted && start.rate) {
    keys.push(start.planted.key);
    counts.push(Math.max(1, Math.round((start.planted.perSecond * RECORDS_PER_FRAME) / start.rate)));
  }
  if (start.protocol === 'msgpack') return [encode({ t: MsgType.Report, keys, counts }), keys.length];
  const map: Record<string, number> = {};
  keys.forEach((k, i) => (map[k] = counts[i]!));
  return [JSON.stringify({ type: 'report', keys: map }), keys.length];
}

let sawPlanted = false;
const sockets: WebSocket[] = [];
for (let c = 0; c < start.connections; c++) {
  const ws = new WebSocket(start.url, { perMessageDeflate: false });
  ws.binaryType = 'nodebuffer';
  await once(ws, 'open', { signal: AbortSignal.timeout(10_000) });
  const greeted = once(ws, 'message', { signal: AbortSignal.timeout(10_000) });
  const instance = `load-${process.pid}-${c}`;
  if (start.protocol === 'msgpack') ws.send(encode({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'bench', instance, sdk: 'bench-load', role: 'sdk' }));
  else ws.send(JSON.stringify({ type: 'hello', app: 'bench', instance }));
  await greeted;
  ws.on('error', () => undefined);
  if (start.planted) {
    const planted = start.planted.key;
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (sawPlanted) return;
      if (isBinary) {
        const m = decodeFrame(data);
        if (m.t === MsgType.Promote && m.key === planted) sawPlanted = true;
      } else if (String(data).includes(`"promote","key":${JSON.stringify(planted)}`)) sawPlanted = true;
    });
  }
  sockets.push(ws);
}
toParent({ type: 'ready' });

const { durationMs } = await fromParent<{ durationMs: number }>('go', 60_000);
let records = 0;
let next = 0;
const startedAt = Date.now();
const stopAt = startedAt + durationMs;
await new Promise<void>((resolve) => {
  const pump = () => {
    for (const ws of sockets) {
      if (ws.readyState !== WebSocket.OPEN) continue;
      while (ws.bufferedAmount < HIGH_WATER) {
        if (start.rate && records >= ((Date.now() - startedAt) * start.rate) / 1000) break;
        if (start.distinct) {
          const [frame, n] = distinctFrame();
          ws.send(frame);
          records += n;
        } else {
          const i = next++ % FRAMES;
          ws.send(frames[i]!);
          records += recordsOf[i]!;
        }
      }
    }
    if (Date.now() >= stopAt) {
      resolve();
    } else setTimeout(pump, 1);
  };
  pump();
});

// barrier: the reply comes after the server handled every frame sent before it
const closedEarly = sockets.filter((ws) => ws.readyState !== WebSocket.OPEN).length;
await Promise.all(
  sockets.map(async (ws) => {
    if (ws.readyState !== WebSocket.OPEN) return;
    const answered = new Promise<void>((resolve) => {
      ws.on('message', (data: Buffer, isBinary: boolean) => {
        if (!isBinary) {
          if (String(data).includes('pong')) resolve();
        } else if (decodeFrame(data).t === MsgType.Snapshot) resolve();
      });
    });
    ws.send(start.protocol === 'msgpack' ? encode({ t: MsgType.Resync }) : JSON.stringify({ type: 'ping' }));
    await answered;
  }),
);
const drainedAt = Date.now();
toParent({ type: 'done', records, startedAt, stoppedAt: stopAt, drainedAt, closedEarly, sawPlanted });
for (const ws of sockets) ws.terminate();
process.exit(0);
