/**
 * The recording side shared by the consistency checker's worker processes (consistency-worker.ts
 * for ioredis, consistency-node-redis-worker.ts for node-redis): the batch of records sent to the
 * parent over IPC every 100 ms, the stop handshake (last batch, then close and exit), the writer
 * loop and the reader loops' yield, so both clients' operations are recorded the same way and one
 * judge (consistency-records.ts) weighs them together.
 */
import { hostNow } from '../support/host-clock.ts';
import { delay } from '../support/wait.ts';

/** One record (arrays, to keep IPC small); the layouts are listed in consistency-worker.ts. */
export type Rec = (string | number | boolean)[];

export interface RecordsOut {
  /** false once the parent asked this process to stop: every loop ends */
  readonly running: boolean;
  push(rec: Rec): void;
}

export interface RecordsOutOptions {
  /** closes this process's clients; the process exits when they have settled */
  close: () => Promise<unknown>[];
  /** fields added to the last message (e.g. SDK counters the parent checks) */
  finalExtra?: () => object;
}

/** Starts the flusher and installs the stop and disconnect handlers. */
export function startRecordsOut(opts: RecordsOutOptions): RecordsOut {
  let batch: Rec[] = [];
  let running = true;
  const flusher = setInterval(() => {
    if (batch.length === 0 || !process.connected) return;
    process.send?.({ type: 'records', records: batch });
    batch = [];
  }, 100);
  process.on('message', (msg: { type: string }) => {
    if (msg.type !== 'stop') return;
    running = false;
    clearInterval(flusher);
    process.send?.({ type: 'records', records: batch, ...opts.finalExtra?.() }, () => {
      batch = [];
      void Promise.allSettled(opts.close()).finally(() => process.exit(0));
    });
  });
  // the parent is gone (or its test failed): nobody reads our records, stop
  process.on('disconnect', () => process.exit(0));
  return {
    get running() {
      return running;
    },
    push: (rec) => batch.push(rec),
  };
}

/** A read reply as the version it records: 0 where the key was absent. */
const versionOf = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));

const tick = () => new Promise<void>((r) => setImmediate(r));

/**
 * Runs `round` until stopped, yielding to I/O between rounds: hot reads resolve as microtasks
 * and would starve the sockets.
 */
export async function readLoop(out: RecordsOut, round: () => Promise<void>): Promise<void> {
  let n = 0;
  while (out.running) {
    await round();
    await (++n % 8 === 0 ? delay(2) : tick());
  }
}

/**
 * Reads `keys` with one call, recording one read per key with the call's start and end; false
 * when the call failed (Redis down: no read to judge).
 */
export async function recordReads(
  out: RecordsOut,
  keys: readonly string[],
  via: string,
  read: () => Promise<readonly unknown[]>,
): Promise<boolean> {
  const start = hostNow();
  try {
    const values = await read();
    const end = hostNow();
    keys.forEach((key, i) => out.push(['r', key, versionOf(values[i]), start, end, via]));
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes `key` with growing versions every `everyMs` until stopped, recording each write as
 * ['w', key, version, start, end, acked, kind]; `write` resolves to whether the write counts as
 * acknowledged (a rejection records it unacknowledged).
 */
export async function writeLoop(
  out: RecordsOut,
  key: string,
  kind: string,
  everyMs: number,
  write: (value: string) => Promise<boolean>,
): Promise<void> {
  let version = Math.floor(hostNow()); // grows across restarts of this process
  while (out.running) {
    await recordWrite(out, key, kind, ++version, write);
    await delay(everyMs);
  }
}

/**
 * Writes version `v` of `key` once, recording it as ['w', key, v, start, end, acked, kind];
 * `write` resolves to whether it counts as acknowledged (a rejection records it unacknowledged).
 */
export async function recordWrite(
  out: RecordsOut,
  key: string,
  kind: string,
  v: number,
  write: (value: string) => Promise<boolean>,
): Promise<void> {
  const start = hostNow();
  let acked = false;
  try {
    acked = await write(String(v));
  } catch {
    acked = false;
  }
  out.push(['w', key, v, start, hostNow(), acked, kind]);
}
