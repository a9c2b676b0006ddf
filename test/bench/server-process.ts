/**
 * Parent side of server.worker.ts: starts a server under test in its own process and reads its
 * CPU time and heap, each request bounded by a deadline. A bench-specific layer, not a third hub
 * starter: it measures four kinds of server ('hub', the real one through hub-under-test.ts and
 * the tests' startHubInProcess; 'sink', decode-only; 'naive', the baseline hub; 'echo', a bare
 * ws server answering each frame, ws-echo.ts) in a worker of its own, so that their figures are
 * not mixed with the load generators'. Tests start hub processes with support/hub-process.ts.
 */
import { once } from 'node:events';
import { fenceMsOf } from '../../hub/src/core/invalidate/ownership-fence.ts';
import { DEFAULT_TUNABLES } from '../../hub/src/core/tunables.ts';
import { forkWorker, type Worker } from './harness.ts';
import { within } from '../support/wait.ts';

/** ms before a fresh hub acks its first write: one fence after its start (PROTOCOL.md, H16) */
export const START_FENCE_MS = fenceMsOf(DEFAULT_TUNABLES.leaseMs);
/**
 * Writes a bench sends a fresh hub before it measures the write path: a server's CPU per write
 * falls over its first ~8,000 writes as V8 optimises its code (the hub's and ws's alike), and
 * counted, that is the JIT's cost, not a write's.
 */
export const HUB_WARM_WRITES = 10_000;

/** Options of the server under test, passed to its process as JSON. */
export interface ServerOptions {
  /** the rule threshold (accesses per window) @default 1000 */
  threshold?: number;
  /** hub only: fields of the app `bench`'s rule over the defaults (hub-under-test.ts) */
  rule?: Record<string, unknown>;
  /** hub tunables passed through to startHub */
  tunables?: Record<string, number>;
  /** hub only: more apps, each with one catch-all rule made of these fields (hub-under-test.ts) */
  apps?: Record<string, Record<string, unknown>>;
}

export type ServerKind = 'hub' | 'sink' | 'naive' | 'echo';

export interface ServerStats {
  cpuMs: number;
  /** of cpuMs: user (JavaScript, libuv) and system (the kernel: on loopback TCP, also the receivers' side) */
  userMs: number;
  systemMs: number;
  heapUsed: number;
  rss: number;
  records: number;
}

export interface ServerProcess {
  kind: ServerKind;
  url: string;
  pid: number;
  worker: Worker;
  stats(): Promise<ServerStats>;
  /** full GC (the worker runs with --expose-gc), then heapUsed */
  gcHeap(): Promise<number>;
  stop(): Promise<void>;
}

export async function startServer(
  kind: ServerKind,
  opts: ServerOptions = {},
  execArgv: string[] = [],
): Promise<ServerProcess> {
  // BENCH_CPU_PROF=dir: profile every server under test into dir/<kind>/ (see profile-summary.ts);
  // one file per thread, the largest is the main thread
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}/${kind}`] : [];
  const worker = forkWorker(new URL('./server.worker.ts', import.meta.url), [kind, JSON.stringify(opts)], {
    execArgv: ['--expose-gc', ...prof, ...execArgv],
  });
  try {
    const ready = await worker.waitFor<{ url: string; pid: number }>('ready', 20_000);
    return {
      kind,
      url: ready.url,
      pid: ready.pid,
      worker,
      async stats() {
        worker.send({ type: 'stats' });
        return worker.waitFor<ServerStats>('stats', 10_000);
      },
      async gcHeap() {
        worker.send({ type: 'gc' });
        return (await worker.waitFor<{ heapUsed: number }>('gc', 30_000)).heapUsed;
      },
      async stop() {
        // ask for a normal exit (profiles are written on exit), then make sure
        worker.send({ type: 'exit' });
        await within('the server worker to exit', once(worker.child, 'exit'), 3000).catch(() => undefined);
        await worker.kill();
      },
    };
  } catch (err) {
    await worker.kill();
    throw err;
  }
}
