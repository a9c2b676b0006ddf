/**
 * Load generator for the ingest benchmark, one per process: opens SDK connections and writes
 * pre-encoded Report frames as fast as each socket drains (bounded by `HIGH_WATER` queued bytes),
 * then sends an in-order barrier (msgpack Resync, answered by a Snapshot; JSON ping/pong for the
 * naive hub) and reports when the server had absorbed everything it sent.
 *
 *   <- { type: 'start', url, protocol: 'msgpack' | 'json', connections, seed, distinct?, rate?, planted?, route? }
 *   -> { type: 'ready', hubs, cpuMs }
 *   <- { type: 'go', durationMs }
 *   -> { type: 'done', records, startedAt, drainedAt, closedEarly, sawPlanted, cpuMs }
 *
 * Default: a pool of frames over 50k Zipf keys, sent flat out. `distinct`: every record a key
 * never sent before (a cardinality flood), at `rate` records/s, with `planted.key` riding along at
 * `planted.perSecond`; `sawPlanted` says whether the server broadcast a promotion of it.
 *
 * `route` (msgpack, pooled frames): act like SDK instances in a cluster. `url` is only the seed:
 * the hub ids come from its Welcome.members, each connection becomes one socket per member hub,
 * and each pooled frame is merged to one record per key and split by `Ownership.owner(key)` into
 * one Report per hub, sent together (an SDK flush) once every socket of that instance has drained
 * below `HIGH_WATER`. `hubs` in
 * `ready` lists the ids routed over. `cpuMs` is this process's CPU time so far (it exits after
 * `done`, so the parent cannot read it then).
 */
import WebSocket from 'ws';
import { once } from 'node:events';
import { Ownership } from '../../sdk/src/ownership.ts';
import {
  decodeFrame,
  decodeServerMessage,
  encode,
  MsgType,
  PROTOCOL_VERSION,
  type Member,
} from '../../sdk/src/wire/protocol.ts';
import { fromParent, toParent } from './harness.ts';
import { ZipfSampler, mulberry32 } from './zipf.ts';

/** records per Report frame: a busy instance's flush */
export const RECORDS_PER_FRAME = 500;

/** The `done` message, as the benchmarks read it. */
export interface LoadDone {
  records: number;
  startedAt: number;
  drainedAt: number;
  closedEarly: number;
  /** this process's CPU time in ms */
  cpuMs: number;
}
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
  /** route each record to its owner hub over the seed's member list @default false */
  route?: boolean;
}

const start = await fromParent<Start>('start', 30_000);
if (start.route && (start.protocol !== 'msgpack' || start.distinct))
  throw new TypeError('route needs protocol msgpack and pooled frames');

/** Opens a socket to `url` and says Hello as SDK `instance`; resolves with the first reply. */
async function connect(url: string, instance: string): Promise<[WebSocket, Buffer | string]> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  ws.binaryType = 'nodebuffer';
  await once(ws, 'open', { signal: AbortSignal.timeout(10_000) });
  const greeted = once(ws, 'message', { signal: AbortSignal.timeout(10_000) });
  if (start.protocol === 'msgpack')
    ws.send(encode({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'bench', instance, sdk: 'bench-load', role: 'sdk' }));
  else ws.send(JSON.stringify({ type: 'hello', app: 'bench', instance }));
  const [reply] = (await greeted) as [Buffer | string];
  return [ws, reply];
}

/** The hubs to load: the seed alone, or (route) every member the seed's Welcome lists. */
async function discoverHubs(): Promise<Member[]> {
  if (!start.route) return [{ id: '', url: start.url }];
  const [ws, reply] = await connect(start.url, `load-${process.pid}-discover`);
  ws.terminate();
  const welcome = decodeServerMessage(reply as Buffer);
  if (welcome.t !== MsgType.Welcome) throw new Error(`seed ${start.url} answered type ${welcome.t}, not Welcome`);
  const missing = welcome.members.filter((m) => m.url === '');
  if (missing.length > 0) throw new Error(`members without a URL: ${missing.map((m) => m.id).join(', ')}`);
  return welcome.members;
}
const hubs = await discoverHubs();
const ownership = new Ownership(hubs.map((h) => h.id));
const hubIndex = new Map(hubs.map((h, i) => [h.id, i]));

/**
 * A pooled frame as an SDK flushes it: one record per key (duplicates summed), split by owner;
 * part h goes to hub h (undefined when it owns none of the keys). Returns [parts, records].
 */
function routed(keys: string[], counts: number[]): [(Uint8Array | undefined)[], number] {
  const merged = new Map<string, number>();
  keys.forEach((key, i) => merged.set(key, (merged.get(key) ?? 0) + counts[i]!));
  const parts = hubs.map(() => ({ keys: [] as string[], counts: [] as number[] }));
  for (const [key, count] of merged) {
    const part = parts[hubIndex.get(ownership.owner(key)!)!]!;
    part.keys.push(key);
    part.counts.push(count);
  }
  return [
    parts.map((p) => (p.keys.length > 0 ? encode({ t: MsgType.Report, keys: p.keys, counts: p.counts }) : undefined)),
    merged.size,
  ];
}
const zipf = new ZipfSampler({ n: KEYS, s: 1.1, seed: start.seed });
const random = mulberry32(start.seed + 1);
/** frames[f][h]: pooled frame f's part for hub h (one part, for the one hub, unless routing) */
const frames: (Uint8Array | string | undefined)[][] = [];
/** records of frame f as the server(s) will count them */
const recordsOf: number[] = [];
for (let f = 0; f < FRAMES; f++) {
  const keys: string[] = [];
  const counts: number[] = [];
  for (let i = 0; i < RECORDS_PER_FRAME; i++) {
    keys.push(`item:${zipf.next()}`);
    counts.push(1 + Math.floor(random() * 5));
  }
  if (start.route) {
    const [parts, records] = routed(keys, counts);
    frames.push(parts);
    recordsOf.push(records);
  } else if (start.protocol === 'msgpack') {
    frames.push([encode({ t: MsgType.Report, keys, counts })]);
    recordsOf.push(RECORDS_PER_FRAME);
  } else {
    // the naive client's shape: one object of key -> count (duplicates in a frame merge, as a Map would)
    const map: Record<string, number> = {};
    keys.forEach((k, i) => (map[k] = (map[k] ?? 0) + counts[i]!));
    frames.push([JSON.stringify({ type: 'report', keys: map })]);
    recordsOf.push(Object.keys(map).length);
  }
}

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
/** instances[c][h]: connection c's socket to hub h */
const instances: WebSocket[][] = [];
const sockets: WebSocket[] = [];
for (let c = 0; c < start.connections; c++) {
  const instance: WebSocket[] = [];
  for (const hub of hubs) {
    const [ws] = await connect(hub.url, `load-${process.pid}-${c}`);
    ws.on('error', () => undefined);
    instance.push(ws);
    sockets.push(ws);
  }
  instances.push(instance);
}
for (const ws of sockets) {
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
}
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
toParent({ type: 'ready', hubs: hubs.map((h) => h.id), cpuMs: cpuMs() });

const { durationMs } = await fromParent<{ durationMs: number }>('go', 60_000);
let records = 0;
let next = 0;
const startedAt = Date.now();
const stopAt = startedAt + durationMs;
await new Promise<void>((resolve) => {
  const pump = () => {
    for (const instance of instances) {
      // an instance whose link to one hub broke (closedEarly) stops, as a blocked flush would
      if (!instance.every((ws) => ws.readyState === WebSocket.OPEN)) continue;
      while (instance.every((ws) => ws.bufferedAmount < HIGH_WATER)) {
        if (start.rate && records >= ((Date.now() - startedAt) * start.rate) / 1000) break;
        if (start.distinct) {
          const [frame, n] = distinctFrame();
          instance[0]!.send(frame);
          records += n;
        } else {
          const i = next++ % FRAMES;
          const parts = frames[i]!;
          for (let h = 0; h < parts.length; h++) if (parts[h] !== undefined) instance[h]!.send(parts[h]!);
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
const done: LoadDone = { records, startedAt, drainedAt, closedEarly, cpuMs: cpuMs() };
toParent({ type: 'done', ...done, stoppedAt: stopAt, sawPlanted });
for (const ws of sockets) ws.terminate();
process.exit(0);
