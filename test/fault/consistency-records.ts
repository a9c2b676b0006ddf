/**
 * What the consistency checkers share (consistency-checker.test.ts, consistency-churn.test.ts):
 * their worker processes (consistency-worker.ts) and the records they send, and the verdict. A read
 * is STALE when it returns a version older than one whose write was acknowledged before the read
 * began, on one clock for every process of the host (hostNow).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const WORKER = fileURLToPath(new URL('./consistency-worker.ts', import.meta.url));

export type Read = { key: string; v: number; start: number; end: number; proc: string; via: string };
export type Write = {
  key: string;
  v: number;
  start: number;
  end: number;
  acked: boolean;
  kind: string;
  proc: string;
};

export interface Worker {
  id: string;
  child: ChildProcess;
  exited: Promise<void>;
}

/** `n` more loads of process `proc` were answered by a kept cold read (recentReadsUsed), by time `t` */
export type KeptLoads = { t: number; n: number; proc: string };

/** value push counters summed over the workers (sent with their last records) */
export type PushStats = { updatesSent: number; updatesInjected: number; valuesInjected: number };

/** Everything the workers of one run recorded; every worker process it started, for cleanup. */
export class Records {
  readonly reads: Read[] = [];
  readonly writes: Write[] = [];
  readonly push: PushStats = { updatesSent: 0, updatesInjected: 0, valuesInjected: 0 };
  readonly keptLoads: KeptLoads[] = [];
  readonly children: ChildProcess[] = [];
  /** reads and writes by key, built by the first judge after new records (judging many keys stays linear) */
  #byKey: Map<string, { reads: Read[]; writes: Write[] }> | undefined;

  /** Forks a worker with config `cfg` (consistency-worker.ts Config, `id` added) and resolves once it is ready. */
  startWorker(id: string, cfg: object, file = WORKER): Promise<Worker> {
    const child = fork(file, [], {
      env: { ...process.env, CK_CONFIG: JSON.stringify({ id, ...cfg }) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.children.push(child);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.on('message', (msg: { type: string; records?: (string | number | boolean)[][]; push?: PushStats }) => {
      if (msg.type !== 'records') return;
      if (msg.push !== undefined)
        for (const k of Object.keys(this.push) as (keyof PushStats)[]) this.push[k] += msg.push[k];
      this.#byKey = undefined;
      for (const r of msg.records!) {
        if (r[0] === 'u') this.keptLoads.push({ t: r[1] as number, n: r[2] as number, proc: id });
        else if (r[0] === 'r')
          this.reads.push({
            key: r[1] as string,
            v: r[2] as number,
            start: r[3] as number,
            end: r[4] as number,
            proc: id,
            via: r[5] as string,
          });
        else
          this.writes.push({
            key: r[1] as string,
            v: r[2] as number,
            start: r[3] as number,
            end: r[4] as number,
            acked: r[5] as boolean,
            kind: r[6] as string,
            proc: id,
          });
      }
    });
    return new Promise((resolve, reject) => {
      // tsx start-up on two busy cores can take a while
      const timer = setTimeout(() => reject(new Error(`worker ${id} not ready within 60 s`)), 60_000);
      child.once('message', () => {
        clearTimeout(timer);
        resolve({ id, child, exited });
      });
    });
  }

  /** The reads and writes of `key`, in arrival order. */
  of(key: string): { reads: readonly Read[]; writes: readonly Write[] } {
    if (this.#byKey === undefined) {
      const byKey = new Map<string, { reads: Read[]; writes: Write[] }>();
      const entry = (k: string) => {
        let e = byKey.get(k);
        if (e === undefined) byKey.set(k, (e = { reads: [], writes: [] }));
        return e;
      };
      for (const r of this.reads) entry(r.key).reads.push(r);
      for (const w of this.writes) entry(w.key).writes.push(w);
      this.#byKey = byKey;
    }
    return this.#byKey.get(key) ?? { reads: [], writes: [] };
  }

  /** Kills whatever worker is still running (test.after). */
  killAll(): void {
    for (const child of this.children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }

  /**
   * Stale reads of `key`: versions older than the newest write acknowledged before the read began.
   * Absent values (version 0) from reads that ended after `redisLostAt` are Redis's lost data, not a
   * stale cache (a read in flight when Redis died may be answered by the restarted, empty one).
   */
  judge(key: string, redisLostAt = Infinity): Verdict {
    const { reads, writes } = this.of(key);
    const ws = [...writes].sort((a, b) => a.end - b.end);
    const acked = ws.filter((w) => w.acked);
    const rs = [...reads].sort((a, b) => a.start - b.start);
    const stale: Verdict['stale'] = [];
    let i = 0;
    let newestAcked: Write | undefined;
    for (const r of rs) {
      for (; i < acked.length && acked[i]!.end < r.start; i++)
        if (newestAcked === undefined || acked[i]!.v > newestAcked.v) newestAcked = acked[i];
      if (r.v === 0 && r.end >= redisLostAt) continue;
      if (newestAcked !== undefined && r.v < newestAcked.v) stale.push({ read: r, missed: newestAcked });
    }
    // staleness of each write: how long after it started did reads still see something older
    const staleness = new Map<Write, number>();
    const byStart = [...ws].sort((a, b) => a.start - b.start);
    for (const w of byStart) staleness.set(w, 0);
    for (const r of rs) {
      if (r.v === 0 && r.end >= redisLostAt) continue;
      // writes newer than r.v that started before r: r was stale for them (visibility lag)
      for (let j = byStart.length - 1; j >= 0; j--) {
        const w = byStart[j]!;
        if (w.start > r.start) continue;
        if (w.v <= r.v) break;
        const lag = r.start - w.start;
        if (lag > staleness.get(w)!) staleness.set(w, lag);
        if (r.start - w.start > 30_000) break;
      }
    }
    return { stale, staleness };
  }
}

export interface Verdict {
  /** each stale read, with the acknowledged write it missed (the newest one acked before it began) */
  stale: { read: Read; missed: Write }[];
  /** per write: ms from its start to the start of the last read that still returned an older version */
  staleness: Map<Write, number>;
}

/** Stops a worker: its last records arrive first; SIGKILL after 5 s. */
export async function stopWorker(w: Worker): Promise<void> {
  if (w.child.exitCode !== null || w.child.signalCode !== null) return;
  w.child.kill('SIGCONT');
  w.child.send({ type: 'stop' });
  const timer = setTimeout(() => w.child.kill('SIGKILL'), 5000);
  await w.exited;
  clearTimeout(timer);
}

/** The `p`th percentile of an ascending array (NaN when empty). */
export function pct(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export const fmt = (x: number): string => (Number.isNaN(x) ? '—' : `${Math.round(x)}`);
