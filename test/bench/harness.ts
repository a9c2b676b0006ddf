/**
 * Benchmark harness: hrtime ns/op measurement (warm-up, several rounds, median), percentiles, and
 * child-process orchestration with deadlines.
 *
 * Every benchmark file runs in its own child process (`runBenchFile`): a benchmark that leaks, pins
 * a core or crashes cannot skew or sink the next one. A benchmark file calls `benchMain` with a
 * function returning its rows; the rows travel back to the parent over the IPC channel. Load
 * generators are forked with `forkWorker` and talk over IPC with `waitFor`, each wait bounded.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { within } from '../support/wait.ts';

/** One line of the results table. */
export interface BenchRow {
  /** benchmark id and name, e.g. `1 ingest` */
  bench: string;
  /** what is measured, e.g. `records/s, 4 SDK processes` */
  metric: string;
  /** our figure (NaN when it could not be measured) */
  ours: number;
  /** the naive baseline's figure in the same run, when there is one */
  baseline?: number;
  unit: string;
  /** which way is better: decides the ratio's reading and whether a target is met */
  better: 'higher' | 'lower';
  /** reach: must meet; aim: would like to meet */
  target?: { reach?: number; aim?: number };
  /** short remark (conditions, failures) */
  note?: string;
}

// ---------------------------------------------------------------- measurement

/** Keeps results observable so that V8 cannot drop the measured work as dead code. */
let blackhole = 0;
export function consume(value: unknown): void {
  if (value === undefined) blackhole ^= 1;
  else if (typeof value === 'number') blackhole = (blackhole + value) | 0;
  else blackhole = (blackhole + 7) | 0;
}
export function blackholeValue(): number {
  return blackhole;
}

export interface NsPerOpOptions {
  /** time spent running the body before measuring, so that V8 optimises it @default 300 */
  warmupMs?: number;
  /** measured rounds; the median is reported @default 7 */
  rounds?: number;
  /** target duration of one round: iterations are calibrated to it @default 100 */
  roundMs?: number;
}

export interface NsPerOp {
  /** median ns per operation over the rounds */
  median: number;
  min: number;
  max: number;
  rounds: number[];
  iterations: number;
}

/**
 * ns/op of `body(n)`, which must perform the operation `n` times in a loop of its own (a call per
 * operation would measure the call). Loop overhead is included, the same for every variant, so
 * compare variants measured the same way (e.g. beside a bare `Map.get`).
 */
export function measureNsPerOp(body: (n: number) => unknown, opts: NsPerOpOptions = {}): NsPerOp {
  const run = nsPerOpRun(opts);
  for (let n = run.next(); n > 0; n = run.next()) {
    const t0 = process.hrtime.bigint();
    consume(body(n));
    run.took(Number(process.hrtime.bigint() - t0));
  }
  return run.result();
}

/** measureNsPerOp for a body that awaits its operations (each `await` ends a microtask). */
export async function measureNsPerOpAsync(
  body: (n: number) => Promise<unknown>,
  opts: NsPerOpOptions = {},
): Promise<NsPerOp> {
  const run = nsPerOpRun(opts);
  for (let n = run.next(); n > 0; n = run.next()) {
    const t0 = process.hrtime.bigint();
    consume(await body(n));
    run.took(Number(process.hrtime.bigint() - t0));
  }
  return run.result();
}

/**
 * The schedule both measurements follow: calibrate n upwards until one call takes a measurable
 * slice (warming up on the way), then `rounds` rounds of `roundMs` each. `next()` is the n to
 * run (0: done), `took(ns)` reports how long it took.
 */
function nsPerOpRun(opts: NsPerOpOptions) {
  const rounds = opts.rounds ?? 7;
  const roundMs = opts.roundMs ?? 100;
  const warmEnd = process.hrtime.bigint() + BigInt(Math.round((opts.warmupMs ?? 300) * 1e6));
  let n = 1000;
  let iterations = 0; // 0 while calibrating
  const samples: number[] = [];
  return {
    next: (): number => (iterations === 0 ? n : samples.length < rounds ? iterations : 0),
    took(elapsed: number): void {
      if (iterations !== 0) {
        samples.push(elapsed / iterations);
        return;
      }
      const perOp = elapsed / n;
      if (process.hrtime.bigint() >= warmEnd && elapsed > 5e6)
        iterations = Math.max(1000, Math.round((roundMs * 1e6) / Math.max(perOp, 0.01)));
      else if (elapsed < 5e6) n *= 2;
    },
    result(): NsPerOp {
      const sorted = [...samples].sort((a, b) => a - b);
      return {
        median: percentile(sorted, 50, true),
        min: sorted[0]!,
        max: sorted[sorted.length - 1]!,
        rounds: samples,
        iterations,
      };
    },
  };
}

/**
 * The p-th percentile (0–100) by nearest rank. Sorts a copy unless `sorted` says the input is
 * already ascending. NaN for an empty input: a missing figure must not read as zero.
 */
export function percentile(values: ArrayLike<number>, p: number, sorted = false): number {
  const n = values.length;
  if (n === 0) return NaN;
  const data = sorted ? values : Float64Array.from(values).sort();
  const rank = Math.min(n, Math.max(1, Math.ceil((p / 100) * n)));
  return data[rank - 1]!;
}

export function mean(values: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i]!;
  return values.length ? sum / values.length : NaN;
}

/** CPU time (user + system, ms) a process has used, read from /proc so it works for any pid. */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // fields after the parenthesised command name; utime and stime are fields 14 and 15
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / CLOCK_TICKS;
}
/** USER_HZ is 100 on every Linux this runs on (it is fixed in the kernel ABI). */
const CLOCK_TICKS = 100;

/** heapUsed after two full GCs (the second collects what the first one's finalisers freed); needs --expose-gc */
export function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/**
 * The heap after full GCs with a task turn between them: what a weak reference or a finalization
 * callback keeps (Node's `AbortSignal.timeout`, which node-redis arms for every command, clears its
 * timer from a finalization registry) is released only after a GC has run and a later task has, so
 * GCs in one synchronous job still count the last burst of commands (+10 MB after 100k GETs here).
 */
export async function settledHeapAfterGc(): Promise<number> {
  heapAfterGc();
  await new Promise((resolve) => setTimeout(resolve, 20));
  heapAfterGc();
  await new Promise((resolve) => setTimeout(resolve, 20));
  return heapAfterGc();
}

// ---------------------------------------------------------------- deadlines

// ---------------------------------------------------------------- child processes

const TSX = ['--conditions=@hotkey/source', '--import', 'tsx'];

/**
 * IPC messages keyed by their `type`: a message nobody waits for yet is queued, a wait that times
 * out is withdrawn (so that a late message is queued, not swallowed by a dead waiter).
 */
class Mailbox {
  readonly #inbox: Record<string, unknown>[] = [];
  readonly #waiters = new Set<{
    type: string;
    resolve: (m: Record<string, unknown>) => void;
    reject: (e: Error) => void;
  }>();
  #closed: Error | undefined;

  deliver(message: Record<string, unknown>): void {
    for (const w of this.#waiters) {
      if (w.type === message.type) {
        this.#waiters.delete(w);
        w.resolve(message);
        return;
      }
    }
    if (this.#inbox.length < 10_000) this.#inbox.push(message);
  }

  close(err: Error): void {
    this.#closed = err;
    for (const w of this.#waiters) w.reject(err);
    this.#waiters.clear();
  }

  take<T>(type: string, ms: number, what: string): Promise<T> {
    const i = this.#inbox.findIndex((m) => m.type === type);
    if (i >= 0) return Promise.resolve(this.#inbox.splice(i, 1)[0] as T);
    if (this.#closed) return Promise.reject(this.#closed);
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(new Error(`${what}: no "${type}" message within ${ms} ms`));
      }, ms);
      const waiter = {
        type,
        resolve: (m: Record<string, unknown>) => {
          clearTimeout(timer);
          resolve(m as T);
        },
        reject: (e: Error) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.#waiters.add(waiter);
    });
  }
}

export interface Worker {
  readonly child: ChildProcess;
  readonly pid: number;
  send(message: unknown): void;
  /** Next IPC message whose `type` equals `type` (messages are queued until asked for). */
  waitFor<T = Record<string, unknown>>(type: string, ms: number): Promise<T>;
  /** SIGKILL and wait for the exit (bounded). */
  kill(): Promise<void>;
}

export interface ForkOptions {
  /** extra node flags, e.g. `--expose-gc`, `--cpu-prof` */
  execArgv?: string[];
  env?: NodeJS.ProcessEnv;
  /** forward the child's stderr to ours @default true */
  stderr?: boolean;
  /** run the module through tsx (with the workspace's source condition); false: plain node, for a .mjs worker @default true */
  tsx?: boolean;
}

/** Forks a TypeScript module (run through tsx, unless `opts.tsx` is false) with an IPC channel. */
export function forkWorker(file: string | URL, args: string[] = [], opts: ForkOptions = {}): Worker {
  const path = file instanceof URL ? fileURLToPath(file) : file;
  const child = fork(path, args, {
    execArgv: [...(opts.tsx === false ? [] : TSX), ...(opts.execArgv ?? [])],
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'inherit', opts.stderr === false ? 'ignore' : 'inherit', 'ipc'],
  });
  const mailbox = new Mailbox();
  child.on('message', (raw) => mailbox.deliver(raw as Record<string, unknown>));
  child.on('exit', (code, signal) => mailbox.close(new Error(`${path} exited (code ${code}, signal ${signal})`)));
  child.on('error', (err) => mailbox.close(err));
  return {
    child,
    pid: child.pid!,
    send(message) {
      if (child.connected) child.send(message as never);
    },
    waitFor<T>(type: string, ms: number): Promise<T> {
      return mailbox.take<T>(type, ms, path);
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit', { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** In a forked child: send a typed message to the parent. */
export function toParent(message: { type: string } & Record<string, unknown>): void {
  process.send?.(message);
}

let parentMailbox: Mailbox | undefined;
/** In a forked child: the next message of `type` from the parent (bounded wait). */
export function fromParent<T = Record<string, unknown>>(type: string, ms: number): Promise<T> {
  if (!parentMailbox) {
    const mailbox = new Mailbox();
    parentMailbox = mailbox;
    process.on('message', (raw) => mailbox.deliver(raw as Record<string, unknown>));
    // the IPC channel is the worker's lifeline: a vanished parent must end it
    process.on('disconnect', () => process.exit(0));
  }
  return parentMailbox.take<T>(type, ms, 'parent');
}

export interface BenchContext {
  /** short smoke run: fewer rounds, smaller loads, looser deadlines are not needed */
  quick: boolean;
}

/**
 * Entry point of a benchmark file: runs `fn` and sends its rows to the parent (or prints them
 * when run on its own: `node --import tsx test/bench/x.bench.ts [--quick]`).
 */
export function benchMain(fn: (ctx: BenchContext) => Promise<BenchRow[]>): void {
  const ctx: BenchContext = { quick: process.argv.includes('--quick') };
  fn(ctx).then(
    (rows) => {
      if (process.send) process.send({ type: 'rows', rows }, () => process.exit(0));
      else {
        console.table(rows.map((r) => ({ ...r, target: JSON.stringify(r.target ?? {}) })));
        process.exit(0);
      }
    },
    (err: unknown) => {
      console.error(err);
      if (process.send)
        process.send({ type: 'error', message: String((err as Error)?.stack ?? err) }, () => process.exit(1));
      else process.exit(1);
    },
  );
}

/**
 * Runs one benchmark file in its own process and returns its rows. A crash, an error or the
 * deadline yields no rows and an error message instead: one broken benchmark does not stop the run.
 */
export async function runBenchFile(
  file: string,
  opts: { quick: boolean; timeoutMs: number; execArgv?: string[] },
): Promise<{ rows: BenchRow[]; error?: string }> {
  const worker = forkWorker(file, opts.quick ? ['--quick'] : [], { execArgv: opts.execArgv });
  const result = new Promise<{ rows: BenchRow[]; error?: string }>((resolve) => {
    worker.child.on('message', (raw) => {
      const m = raw as { type: string; rows?: BenchRow[]; message?: string };
      if (m.type === 'rows') resolve({ rows: m.rows ?? [] });
      if (m.type === 'error') resolve({ rows: [], error: m.message ?? 'unknown error' });
    });
    worker.child.on('exit', (code, signal) =>
      resolve({ rows: [], error: `exited (code ${code}, signal ${signal}) without rows` }),
    );
  });
  try {
    return await within(file, result, opts.timeoutMs);
  } catch (err) {
    return { rows: [], error: (err as Error).message };
  } finally {
    await worker.kill();
  }
}
