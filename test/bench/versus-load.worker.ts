/**
 * The HTTP side of the versus benchmark (versus.bench.ts), in a process of its own: the traffic every
 * system gets, and the read-after-write probes that count stale reads. Every request has a deadline
 * (REQUEST_MS); a request that fails or misses it is an error, never a latency.
 *
 * Traffic, paced against the clock in 10 ms ticks until stopped (a late tick issues what it owes):
 * Zipf(1.1) reads over `zipfKeys` items and writes of Zipf items, spread round-robin over every
 * service (writes from every instance), and from `surgeAt` the flash key's reads, the surge, at
 * `flashRate` until `tailAt` and at `tailRate` after it (the sale goes on, past its peak). Each
 * request's start (hostNow) and latency are kept, so that the parent asks for any window afterwards.
 *
 * Probes, on the flash key, while the traffic runs: a write goes to the writer service, a read to the
 * reader service, each awaited. A read is STALE when it answers a version older than the newest one
 * whose write had been acknowledged (its PUT answered 204) before the read began, or no item at all.
 * A service may say that a write resolved without its system confirming that every instance heard of
 * it (hotkey's `onInvalidateError`: header `x-unconfirmed`): such a write is acknowledged all the
 * same (the caller's call resolved), and reads are judged a second time against confirmed writes only.
 * - `pairs`: n times, a write, then once it is acknowledged a read.
 * - `loop`: for `ms`, a writer writing one version after another and a reader reading, each as fast
 *   as its answers come, concurrently (a fault is in force meanwhile): the reads, the stale ones and
 *   the writes acknowledged within the window.
 *
 *   <- { type: 'op', op: 'traffic', ports, zipfKeys, zipfRate, flashRate, tailRate, writeRate, flashKey, surgeAt, tailAt, seed }
 *   <- { type: 'op', op: 'window', from, to, bucketMs }  -> { type: 'window', ...Window }
 *   <- { type: 'op', op: 'pairs', n, writer, reader, key, bytes }  -> { type: 'probe', ...Probe }
 *   <- { type: 'op', op: 'loop', ms, writer, reader, key, bytes }  -> { type: 'probe', ...Probe }
 *   <- { type: 'op', op: 'loop-until', at }   moves the running loop's end (hostNow ms)
 *   <- { type: 'op', op: 'stop' }  stops the traffic -> { type: 'stopped' }
 */
import { Agent, request } from 'node:http';
import { fromParent, percentile, toParent } from './harness.ts';
import { ZipfSampler } from './zipf.ts';
import { hostNow } from '../support/host-clock.ts';
import { delay } from '../support/wait.ts';

const REQUEST_MS = 3000;
const TICK_MS = 10;
/** requests without an answer beyond which the traffic skips (counted): a stalled service cannot pile them up */
const MAX_IN_FLIGHT = 3000;
const ITEM_BYTES = 100;
/** pause after a probe's failed request: a client that fails fast must not spin */
const RETRY_MS = 50;
/** stale reads described one by one, per probe */
const STALE_KEPT = 10;

const agent = new Agent({ keepAlive: true, maxSockets: 128 });

interface Answer {
  status: number;
  body: string;
  unconfirmed: boolean;
}

function call(port: number, method: 'GET' | 'PUT', path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method, path, agent, signal: AbortSignal.timeout(REQUEST_MS) },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body, unconfirmed: res.headers['x-unconfirmed'] !== undefined }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const itemPath = (key: string) => `/i/${encodeURIComponent(key)}`;

/** a read's answer: the version, null for no item; throws on an error answer */
async function read(port: number, key: string): Promise<number | null> {
  const a = await call(port, 'GET', itemPath(key));
  if (a.status === 404) return null;
  if (a.status !== 200) throw new Error(`GET ${key}: ${a.status} ${a.body}`);
  return Number(a.body.slice(0, a.body.indexOf(' ')));
}

/** resolves whether the system confirmed the write (false: it resolved, but unconfirmed) */
async function write(port: number, key: string, version: number, bytes: number): Promise<boolean> {
  const a = await call(port, 'PUT', `${itemPath(key)}?v=${version}&n=${bytes}`);
  if (a.status !== 204) throw new Error(`PUT ${key}: ${a.status} ${a.body}`);
  return !a.unconfirmed;
}

// ------------------------------------------------------------------ traffic

/** one kept sample per request: start (hostNow ms), latency (ms; NaN for an error), kind */
const starts: number[] = [];
const latencies: number[] = [];
const kinds: number[] = [];
const KIND = { read: 0, flash: 1, write: 2 } as const;
let firstError: string | undefined;
let inFlight = 0;
let skipped = 0;
let running = false;
let version = 0;

function record(kind: number, t0: number, op: Promise<unknown>): void {
  inFlight++;
  op.then(
    () => {
      inFlight--;
      starts.push(t0);
      latencies.push(hostNow() - t0);
      kinds.push(kind);
    },
    (err: unknown) => {
      inFlight--;
      starts.push(t0);
      latencies.push(Number.NaN);
      kinds.push(kind);
      firstError ??= String((err as Error)?.message ?? err).slice(0, 160);
    },
  );
}

async function traffic(t: {
  ports: number[];
  zipfKeys: number;
  zipfRate: number;
  flashRate: number;
  writeRate: number;
  flashKey: string;
  surgeAt: number;
  tailAt: number;
  tailRate: number;
  seed: number;
}): Promise<void> {
  const zipf = new ZipfSampler({ n: t.zipfKeys, s: 1.1, seed: t.seed });
  const writeKeys = new ZipfSampler({ n: t.zipfKeys, s: 1.1, seed: t.seed + 1 });
  const startAt = hostNow();
  let next = 0;
  const port = () => t.ports[next++ % t.ports.length]!;
  let zipfDue = 0;
  let flashDue = 0;
  let writeDue = 0;
  running = true;
  while (running) {
    const now = hostNow();
    const zipfOwed = Math.floor(((now - startAt) * t.zipfRate) / 1000) - zipfDue;
    const peak = Math.max(0, Math.min(now, t.tailAt) - t.surgeAt);
    const tail = Math.max(0, now - t.tailAt);
    const flashOwed = Math.floor((peak * t.flashRate + tail * t.tailRate) / 1000) - flashDue;
    const writeOwed = Math.floor(((now - startAt) * t.writeRate) / 1000) - writeDue;
    zipfDue += zipfOwed;
    flashDue += flashOwed;
    writeDue += writeOwed;
    for (let i = 0; i < zipfOwed + flashOwed + writeOwed; i++) {
      if (inFlight >= MAX_IN_FLIGHT) {
        skipped++;
        continue;
      }
      if (i < zipfOwed) record(KIND.read, now, read(port(), `item:${zipf.next()}`));
      else if (i < zipfOwed + flashOwed) record(KIND.flash, now, read(port(), t.flashKey));
      else record(KIND.write, now, write(port(), `item:${writeKeys.next()}`, ++version, ITEM_BYTES));
    }
    await delay(TICK_MS);
  }
}

export interface Latency {
  n: number;
  errors: number;
  p50: number;
  p99: number;
}
export interface Window {
  reads: Latency;
  /** the flash key's reads alone */
  flash: Latency;
  writes: Latency;
  /** read p99 per bucket from `from` (ms; NaN where a bucket had no answered read) */
  readP99: number[];
  readErrors: number[];
  skipped: number;
  firstError?: string;
}

function window(from: number, to: number, bucketMs: number): Window {
  const buckets = Math.max(1, Math.ceil((to - from) / bucketMs));
  const per: number[][] = Array.from({ length: buckets }, () => []);
  const errs = new Array<number>(buckets).fill(0);
  const acc = { reads: [] as number[], flash: [] as number[], writes: [] as number[] };
  const errors = { reads: 0, flash: 0, writes: 0 };
  for (let i = 0; i < starts.length; i++) {
    const t = starts[i]!;
    if (t < from || t >= to) continue;
    const kind = kinds[i]!;
    const ms = latencies[i]!;
    const b = Math.floor((t - from) / bucketMs);
    const group = kind === KIND.write ? 'writes' : 'reads';
    if (Number.isNaN(ms)) {
      errors[group]++;
      if (kind === KIND.flash) errors.flash++;
      if (group === 'reads') errs[b]!++;
      continue;
    }
    acc[group].push(ms);
    if (kind === KIND.flash) acc.flash.push(ms);
    if (group === 'reads') per[b]!.push(ms);
  }
  const lat = (xs: number[], e: number): Latency => {
    const sorted = Float64Array.from(xs).sort();
    return { n: xs.length + e, errors: e, p50: percentile(sorted, 50, true), p99: percentile(sorted, 99, true) };
  };
  return {
    reads: lat(acc.reads, errors.reads),
    flash: lat(acc.flash, errors.flash),
    writes: lat(acc.writes, errors.writes),
    readP99: per.map((xs) => percentile(xs, 99)),
    readErrors: errs,
    skipped,
    firstError,
  };
}

// ------------------------------------------------------------------ probes

export interface Probe {
  reads: number;
  stale: number;
  /** of the stale reads, those that found no item at all */
  missing: number;
  readErrors: number;
  /** writes acknowledged (within the window, for a loop) */
  acked: number;
  /** of those, writes the system said it could not confirm */
  unconfirmed: number;
  /** reads older than the newest confirmed write when they began */
  staleConfirmed: number;
  writeErrors: number;
  /** latency of each acknowledged write, ms */
  writeMs: number[];
  firstError?: string;
  /** pairs: from the start to the first pair whose write and read both succeeded, ms */
  firstOkMs?: number;
  /** when the probe started (hostNow ms) */
  t0: number;
  /** the first stale reads: when each began (ms since the probe started), the version it answered and the one acknowledged */
  staleSeen: Array<{ atMs: number; got: number | null; acked: number }>;
}

/** the newest version whose write was acknowledged, and the newest one its system confirmed */
let acked = 0;
let confirmed = 0;

function newProbe(): Probe {
  return {
    reads: 0,
    stale: 0,
    missing: 0,
    readErrors: 0,
    unconfirmed: 0,
    staleConfirmed: 0,
    acked: 0,
    writeErrors: 0,
    writeMs: [],
    staleSeen: [],
    t0: hostNow(),
  };
}

async function probeWrite(p: Probe, port: number, key: string, bytes: number, until: () => number): Promise<void> {
  const v = ++version;
  const t0 = hostNow();
  try {
    const sure = await write(port, key, v, bytes);
    acked = Math.max(acked, v);
    if (sure) confirmed = Math.max(confirmed, v);
    if (hostNow() <= until()) {
      p.acked++;
      if (!sure) p.unconfirmed++;
      p.writeMs.push(hostNow() - t0);
    }
  } catch (err) {
    p.writeErrors++;
    p.firstError ??= String((err as Error)?.message ?? err).slice(0, 200);
  }
}

async function probeRead(p: Probe, port: number, key: string): Promise<void> {
  const before = acked;
  const sure = confirmed;
  const at = hostNow();
  try {
    const got = await read(port, key);
    p.reads++;
    if (got === null || got < sure) p.staleConfirmed++;
    if (got === null || got < before) {
      p.stale++;
      if (got === null) p.missing++;
      if (p.staleSeen.length < STALE_KEPT) p.staleSeen.push({ atMs: Math.round(at - p.t0), got, acked: before });
    }
  } catch (err) {
    p.readErrors++;
    p.firstError ??= String((err as Error)?.message ?? err).slice(0, 200);
  }
}

/**
 * `n` write → read pairs; a pair whose write or read failed is retried (after RETRY_MS) until
 * `deadlineMs`, so that pairs after a fault measure the system once it answers again, and how long
 * that took (`firstOkMs`).
 */
async function pairs(o: {
  n: number;
  writer: number;
  reader: number;
  key: string;
  bytes: number;
  deadlineMs: number;
}): Promise<Probe> {
  const p = newProbe();
  const t0 = hostNow();
  const deadline = t0 + o.deadlineMs;
  let done = 0;
  while (done < o.n && hostNow() < deadline) {
    const failedWrites = p.writeErrors;
    const failed = p.writeErrors + p.readErrors;
    await probeWrite(p, o.writer, o.key, o.bytes, () => Number.POSITIVE_INFINITY);
    if (p.writeErrors === failedWrites) await probeRead(p, o.reader, o.key);
    if (p.writeErrors + p.readErrors > failed) await delay(RETRY_MS);
    else {
      p.firstOkMs ??= hostNow() - t0;
      done++;
    }
  }
  return p;
}

/** the running loop's end (hostNow ms): `loop-until` moves it */
let loopEnd = 0;

async function loop(o: { ms: number; writer: number; reader: number; key: string; bytes: number }): Promise<Probe> {
  const p = newProbe();
  loopEnd = hostNow() + o.ms;
  const until = () => loopEnd;
  const writer = (async () => {
    while (hostNow() < loopEnd) {
      const failed = p.writeErrors;
      await probeWrite(p, o.writer, o.key, o.bytes, until);
      if (p.writeErrors > failed) await delay(RETRY_MS);
    }
  })();
  const reader = (async () => {
    while (hostNow() < loopEnd) {
      const failed = p.readErrors;
      await probeRead(p, o.reader, o.key);
      // a read answered at once from memory would otherwise starve this process's other work
      if (p.readErrors > failed) await delay(RETRY_MS);
      else await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  await Promise.all([writer, reader]);
  return p;
}

// ------------------------------------------------------------------ commands

let trafficDone: Promise<void> | undefined;
for (;;) {
  const m = await fromParent<Record<string, unknown> & { op: string }>('op', 3_600_000);
  if (m.op === 'traffic') trafficDone = traffic(m as never);
  else if (m.op === 'window') {
    const w = m as unknown as { from: number; to: number; bucketMs: number };
    toParent({ type: 'window', ...window(w.from, w.to, w.bucketMs) });
  } else if (m.op === 'pairs') toParent({ type: 'probe', ...(await pairs(m as never)) });
  // a loop runs while further commands arrive (loop-until)
  else if (m.op === 'loop') void loop(m as never).then((p) => toParent({ type: 'probe', ...p }));
  else if (m.op === 'loop-until') loopEnd = (m as unknown as { at: number }).at;
  else if (m.op === 'stop') {
    running = false;
    await trafficDone;
    toParent({ type: 'stopped' });
  }
}
