/**
 * Many simulated SDK instances in one process, for the scale benchmarks (connections, detection at
 * 2,000 SDKs, thin spread over 5,000, idle instances under writes). Each instance is one real
 * WebSocket over real TCP speaking the real protocol (Hello, Welcome/Config thresholds, Report,
 * Promote; Invalidate answered with Applied, as an SDK must or the hub fences it; pings answered), but its
 * counting is a few numbers in shared typed arrays and one timer drives every instance: a real
 * HotKeyClient per instance (timers, window, cache, events) would make the generator, not the hub,
 * the thing measured. For the same reason the WebSocket is lean-ws.ts, not `ws`: one shared read
 * buffer per process and frames parsed in place, where `ws` spent ~18.5 µs of CPU per received
 * message at 10,000 connections on the cores the hub runs on.
 *
 * Counting follows the SDK (sdk/src/counting/window.ts, client/report/report-scheduler.ts): a 1 s window of ten
 * 100 ms slices per instance; once the window count reaches the hub's per-instance threshold
 * (Config.local, scaled the same way) the accesses since the last report are due; the first
 * crossing is reported at once (urgent, at least URGENT_FLUSH_GAP_MS after the previous report) and
 * opens an urgent episode of three slices in which every further threshold's worth is reported
 * early too, until the instance sees the key promoted; other counts go at the instance's own
 * 100 ms flush (each instance has its own phase).
 *
 *   <- { type: 'connect', url, count, app?, batch? }  opens `count` more -> { type: 'connected', total, error? }
 *   <- { type: 'surge', key, rate, startAt, durationMs }   every instance accesses `key` at `rate`/s
 *      (fractional rates accrue, so 0.24/s means one access per ~4 s) until all saw it hot or time is up
 *   <- { type: 'collect', key, deadlineMs }  -> { type: 'promoted', key, times, decidedAt, missing, reports, reportBytes }
 *   <- { type: 'leases', everyMs }           every instance asks for a lease every `everyMs` (the SDK's
 *      leaseMs / 4), phases spread evenly over the period; 0 stops asking
 *   <- { type: 'pings', everyMs }            every instance sends a WebSocket ping every `everyMs` (the
 *      SDK's pingIntervalMs), spread the same way; 0 stops
 *   <- { type: 'reports', everyMs, keys, pool } every instance sends a Report of `keys` records (count 1 each,
 *      keys drawn in turn from a pool of `pool` names) every `everyMs`, spread as leases are; 0 stops
 *   <- { type: 'silent', on }                Invalidates and Drops are counted but not answered (the fan-out's cost alone)
 *   <- { type: 'hold', keys, holders }       the first `holders` instances of this process each register every
 *      key of `keys` (protocol 3 Hold, one key per frame, `since` 0: a key never written here is
 *      recorded) -> { type: 'held', frames, refused } once every Held came back; a Drop of a held key
 *      is answered with Applied { d } (unless silent), as an SDK confirms it
 *   <- { type: 'stats' }                     -> { type: 'stats', cpuMs, rss, reports, reportBytes, leaseAsks, grants, applied, invalidates, drops }
 */
import { URGENT_FLUSH_GAP_MS } from '../../sdk/src/client/report/report-scheduler.ts';
import { decodeServerMessage, encode, HoldResult, MsgType, PROTOCOL_VERSION } from '../../sdk/src/wire/protocol.ts';
import { toParent } from './harness.ts';
import { LeanWebSocket } from './lean-ws.ts';
import { hostNow } from '../support/host-clock.ts';
import { delay, within } from '../support/wait.ts';

const SLICES = 10;
const SLICE_MS = 100;
const FLUSH_MS = 100;
/**
 * how often simulated accesses advance and crossings are checked, per this many instances: the
 * SDK reports a crossing at once (setImmediate), and a 5 ms tick put 3–4 ms of its own on every
 * detection at 500 SDKs (the hub decided at 103–105 ms, where a 10× surge reaches the threshold
 * at 100). A tick costs ~0.1 µs per instance, so bigger fleets (thin spread over 5,000) tick less
 * often: at most every 5 ms.
 */
const INSTANCES_PER_TICK_MS = 500;
const MAX_TICK_MS = 5;
/** slices a key stays urgent after its first crossing (window.ts urgentSlices) */
const URGENT_SLICES = 3;
/** how often the lease timer sends the asks that came due */
const LEASE_TICK_MS = 10;

const wallNow = hostNow;

interface Connect {
  url: string;
  count: number;
  app?: string;
  /** handshakes in flight at once @default 32 */
  batch?: number;
}

const sockets: LeanWebSocket[] = [];
/** per instance: the hub's per-instance threshold for the (one) rule, in accesses per 1 s window */
let local = new Float64Array(0);
/** key -> wall time each instance saw it promoted (NaN: not yet) */
const seen = new Map<string, Float64Array>();
/** key -> when the hub decided to promote it (its Promote's `at`), on the host clock */
const decided = new Map<string, number>();
const seenCount = new Map<string, number>();
let reports = 0;
let reportBytes = 0;
/** handshakes that timed out and were tried again */
let handshakeRetries = 0;
let leaseAsks = 0;
let grants = 0;
/** Invalidates answered with Applied */
let applied = 0;
/** Invalidates received */
let invalidates = 0;
/** Drops received (protocol 3: invalidations sent to a key's holders only) */
let drops = 0;
/** Hold frames sent whose Held has not come back, the Hold ids so far, and the keys refused (r ≥ 2) */
let holdsPending = 0;
let holdId = 0;
let holdsRefused = 0;
/** while true, Invalidates are not answered */
let silent = false;
let leaseTimer: NodeJS.Timeout | undefined;
let pingTimer: NodeJS.Timeout | undefined;
let reportTimer: NodeJS.Timeout | undefined;

/** `data` is a view into the read buffer, valid during this call only: decoded here, never kept */
function onFrame(index: number, data: Uint8Array, ws: LeanWebSocket): void {
  const at = wallNow();
  const m = decodeServerMessage(data);
  if (m.t === MsgType.Promote) {
    let times = seen.get(m.key);
    if (times === undefined) {
      seen.set(m.key, (times = new Float64Array(local.length).fill(NaN)));
      seenCount.set(m.key, 0);
      // `at` is the hub's Date.now(): same host, same wall clock; moved onto the host clock here
      decided.set(m.key, m.at - (Date.now() - at));
    }
    if (Number.isNaN(times[index]!)) {
      times[index] = at;
      seenCount.set(m.key, seenCount.get(m.key)! + 1);
    }
  } else if (m.t === MsgType.Invalidate) {
    invalidates++;
    if (silent) return;
    // an instance that holds nothing has nothing to drop, but must confirm: the writer's ack waits on it
    ws.send(encode({ t: MsgType.Applied, seq: m.seq }));
    applied++;
  } else if (m.t === MsgType.Drop) {
    drops++;
    if (silent) return;
    // Applied { d } confirms every Drop up to d; seq 0 claims no broadcast (never ahead of the hub's)
    ws.send(encode({ t: MsgType.Applied, seq: 0, d: m.d }));
    applied++;
  } else if (m.t === MsgType.Held) {
    for (const r of m.r) if (r >= HoldResult.OverShare) holdsRefused++;
    if (--holdsPending === 0) toParent({ type: 'held', frames: holdId, refused: holdsRefused });
  } else if (m.t === MsgType.Grant) {
    grants++;
  } else if (m.t === MsgType.Welcome || m.t === MsgType.Config) {
    local[index] = m.local[0] ?? 1;
  }
}

/** `open`, retried: on a box at load 15 a handshake now and then outlasts its deadline */
async function openRetrying(url: string, app: string, index: number, attempts = 3): Promise<LeanWebSocket> {
  for (let a = 1; ; a++) {
    try {
      return await open(url, app, index);
    } catch (err) {
      if (a >= attempts) throw err;
      handshakeRetries++;
    }
  }
}

/** Connects, sends Hello and resolves once the Welcome came (a failed try leaves no socket behind). */
async function open(url: string, app: string, index: number): Promise<LeanWebSocket> {
  let welcomed!: () => void;
  let refused!: (err: Error) => void;
  const welcome = new Promise<void>((resolve, reject) => {
    welcomed = resolve;
    refused = reject;
  });
  const ws = await LeanWebSocket.connect(
    url,
    {
      onMessage: (data) => {
        onFrame(index, data, ws);
        welcomed();
      },
      // before the Welcome: the hub refused the Hello (after it: settled, no effect)
      onClose: (code, reason) => refused(new Error(`closed ${code} ${reason} before the Welcome`)),
    },
    { timeoutMs: 30_000 },
  );
  ws.send(
    encode({
      t: MsgType.Hello,
      v: PROTOCOL_VERSION,
      app,
      instance: `sim-${process.pid}-${index}`,
      sdk: 'bench-sim',
      role: 'sdk',
    }),
  );
  try {
    await within(`the Welcome of instance ${index}`, welcome, 30_000);
  } catch (err) {
    ws.terminate();
    throw err;
  }
  return ws;
}

process.on('message', (raw) => {
  const m = raw as { type: string; key: string; rate: number; startAt: number; durationMs: number; deadlineMs: number };
  if (m.type === 'connect') void connectMore(raw as Connect);
  else if (m.type === 'surge') surge(m.key, m.rate, m.startAt, m.durationMs);
  else if (m.type === 'collect') void collect(m.key, m.deadlineMs);
  else if (m.type === 'leases') leases((raw as { everyMs: number }).everyMs);
  else if (m.type === 'pings') pings((raw as { everyMs: number }).everyMs);
  else if (m.type === 'reports') steadyReports(raw as { everyMs: number; keys: number; pool: number });
  else if (m.type === 'silent') silent = (raw as { on: boolean }).on;
  else if (m.type === 'hold') hold(raw as { keys: string[]; holders: number });
  else if (m.type === 'stats') {
    const cpu = process.cpuUsage();
    toParent({
      type: 'stats',
      cpuMs: (cpu.user + cpu.system) / 1000,
      rss: process.memoryUsage().rss,
      reports,
      reportBytes,
      leaseAsks,
      grants,
      applied,
      invalidates,
      drops,
    });
  }
});
// the IPC channel is this process's lifeline
process.on('disconnect', () => process.exit(0));

/** Opens `count` more instances, `batch` handshakes at a time. */
async function connectMore(connect: Connect): Promise<void> {
  const grown = new Float64Array(sockets.length + connect.count).fill(1);
  grown.set(local);
  local = grown;
  const batch = connect.batch ?? 32;
  const first = sockets.length;
  try {
    for (let start = 0; start < connect.count; start += batch) {
      const n = Math.min(batch, connect.count - start);
      const opened = await Promise.all(
        Array.from({ length: n }, (_, j) => openRetrying(connect.url, connect.app ?? 'bench', first + start + j)),
      );
      sockets.push(...opened);
    }
    toParent({ type: 'connected', total: sockets.length, retries: handshakeRetries });
  } catch (err) {
    toParent({ type: 'connected', total: sockets.length, retries: handshakeRetries, error: String(err) });
  }
}

/** Accesses of `key` on every instance (see the file's comment for the counting). */
function surge(key: string, rate: number, startAt: number, durationMs: number): void {
  const n = sockets.length;
  const tickMs = Math.min(MAX_TICK_MS, Math.max(1, Math.ceil(n / INSTANCES_PER_TICK_MS)));
  const slices = new Float64Array(n * SLICES);
  const sliceOf = new Float64Array(n).fill(-1); // absolute slice each instance's window is at
  const unreported = new Float64Array(n);
  const lastReport = new Float64Array(n).fill(-Infinity);
  const due = new Uint8Array(n);
  const urgentUntil = new Float64Array(n);
  // evenly spread phases: instance i's accesses and flushes are offset by i/n of a period
  const credit = Float64Array.from({ length: n }, (_, i) => i / n);
  const phase = Float64Array.from({ length: n }, (_, i) => (i * FLUSH_MS) / n);
  const flushPeriod = new Float64Array(n).fill(-1);
  let last = startAt;
  const send = (i: number, now: number) => {
    const frame = encode({ t: MsgType.Report, keys: [key], counts: [unreported[i]!] });
    sockets[i]!.send(frame);
    reports++;
    reportBytes += frame.byteLength;
    unreported[i] = 0;
    lastReport[i] = now;
  };
  const step = () => {
    const now = wallNow();
    if (now < startAt) {
      setTimeout(step, Math.max(0, Math.min(tickMs, startAt - now)));
      return;
    }
    const added = ((now - last) * rate) / 1000;
    last = now;
    const slice = Math.floor(now / SLICE_MS);
    const hotAt = seen.get(key);
    for (let i = 0; i < n; i++) {
      // rotate this instance's window to `slice`
      const from = sliceOf[i]!;
      if (from !== slice) {
        for (let s = Math.max(from + 1, slice - SLICES + 1); s <= slice; s++) slices[i * SLICES + (s % SLICES)] = 0;
        sliceOf[i] = slice;
      }
      const c = credit[i]! + added;
      const whole = Math.floor(c);
      credit[i] = c - whole;
      if (whole > 0) {
        slices[i * SLICES + (slice % SLICES)]! += whole;
        unreported[i]! += whole;
      }
      const period = Math.floor((now - phase[i]!) / FLUSH_MS);
      const flushNow = period !== flushPeriod[i];
      flushPeriod[i] = period;
      if (unreported[i] === 0) continue;
      let windowCount = 0;
      for (let s = 0; s < SLICES; s++) windowCount += slices[i * SLICES + s]!;
      const over = windowCount >= local[i]!;
      if (!over) {
        due[i] = 0;
        continue;
      }
      // the first crossing opens an urgent episode of URGENT_SLICES slices, in which every
      // further threshold's worth of accesses is reported early too (window.ts #cross)
      if (due[i] === 0) {
        due[i] = 1;
        if (urgentUntil[i]! <= now) urgentUntil[i] = now + URGENT_SLICES * SLICE_MS;
      }
      // an instance that saw the key promoted ends its urgent episode (the client's window.calm)
      if (hotAt !== undefined && !Number.isNaN(hotAt[i]!)) urgentUntil[i] = 0;
      const urgent =
        now < urgentUntil[i]! && unreported[i]! >= local[i]! && now - lastReport[i]! >= URGENT_FLUSH_GAP_MS;
      if (urgent || flushNow) send(i, now);
    }
    const allHot = (seenCount.get(key) ?? 0) >= n;
    if (!allHot && now - startAt < durationMs) setTimeout(step, tickMs);
  };
  step();
}

/** Every instance asks for a lease every `everyMs`, instance i at i/n of the period, as SDKs spread by their start times; 0 stops. */
function leases(everyMs: number): void {
  clearInterval(leaseTimer);
  let id = 0;
  leaseTimer = spread(everyMs, (ws) => {
    ws.send(encode({ t: MsgType.Lease, id: ++id }));
    leaseAsks++;
  });
}

/** The first `holders` instances each register every key of `keys`, one Hold frame per key; the parent hears 'held' once all are answered. */
function hold({ keys, holders }: { keys: string[]; holders: number }): void {
  const n = Math.min(holders, sockets.length);
  if (n === 0 || keys.length === 0) {
    toParent({ type: 'held', frames: holdId, refused: holdsRefused });
    return;
  }
  holdsPending += n * keys.length;
  for (let i = 0; i < n; i++)
    for (const key of keys) sockets[i]!.send(encode({ t: MsgType.Hold, id: ++holdId, keys: [key], since: [0] }));
}

/**
 * Every instance reports `keys` keys every `everyMs` (an instance some of whose keys stay over its
 * threshold), counts of 1 so that nothing is promoted; the names cycle through a pool of `pool`.
 */
function steadyReports({ everyMs, keys, pool }: { everyMs: number; keys: number; pool: number }): void {
  clearInterval(reportTimer);
  let next = 0;
  const counts = new Array<number>(keys).fill(1);
  reportTimer = spread(everyMs, (ws) => {
    const names = Array.from({ length: keys }, () => `cap:${process.pid}:${next++ % pool}`);
    const frame = encode({ t: MsgType.Report, keys: names, counts });
    ws.send(frame);
    reports++;
    reportBytes += frame.byteLength;
  });
}

/** Every instance sends a WebSocket ping every `everyMs` (the SDK's liveness check, pingIntervalMs), spread as leases are; 0 stops. */
function pings(everyMs: number): void {
  clearInterval(pingTimer);
  pingTimer = spread(everyMs, (ws) => ws.ping());
}

/** Calls `each` for every instance every `everyMs`, instance i at i/n of the period (a timer every LEASE_TICK_MS sends what came due). */
function spread(everyMs: number, each: (ws: LeanWebSocket) => void): NodeJS.Timeout | undefined {
  if (!(everyMs > 0)) return undefined;
  const n = sockets.length;
  const start = wallNow();
  let done = 0; // calls made since start, instance done % n next
  return setInterval(() => {
    const due = Math.floor(((wallNow() - start) * n) / everyMs);
    for (; done < due; done++) each(sockets[done % n]!);
  }, LEASE_TICK_MS);
}

async function collect(key: string, deadlineMs: number): Promise<void> {
  const deadline = performance.now() + deadlineMs;
  while ((seenCount.get(key) ?? 0) < sockets.length && performance.now() < deadline) await delay(10);
  const times = [...(seen.get(key) ?? [])].filter((t) => !Number.isNaN(t));
  toParent({
    type: 'promoted',
    key,
    times,
    decidedAt: decided.get(key) ?? null, // IPC is JSON: NaN would arrive as null anyway
    missing: sockets.length - times.length,
    reports,
    reportBytes,
  });
}
