/**
 * The parent side of sim-sdk.worker.ts: a fleet of simulated SDK instances spread evenly over a
 * few processes, grown in steps (1k, then 5k, then 10k connections on the same hub).
 * Workers are pushed into `into` before anything can fail, so the caller's `finally` kills them.
 */
import { forkWorker, type Worker } from './harness.ts';

export interface FleetStats {
  /** CPU time of all generator processes, ms */
  cpuMs: number;
  rss: number;
  /** Report frames sent so far and their bytes */
  reports: number;
  reportBytes: number;
  /** Lease frames sent and Grant frames received so far */
  leaseAsks: number;
  grants: number;
  /** Invalidates answered with Applied so far */
  applied: number;
  /** Invalidates received so far (answered or not) */
  invalidates: number;
  /** Drops received so far (answered or not) */
  drops: number;
}

export class SimFleet {
  readonly workers: Worker[];
  readonly #counts: number[];
  /** keys refused so far, all processes */
  #refused = 0;

  private constructor(workers: Worker[]) {
    this.workers = workers;
    this.#counts = workers.map(() => 0);
  }

  static start(into: Worker[], processes: number): SimFleet {
    for (let w = 0; w < processes; w++) into.push(forkWorker(new URL('./sim-sdk.worker.ts', import.meta.url)));
    return new SimFleet(into.slice(-processes));
  }

  get size(): number {
    return this.#counts.reduce((a, b) => a + b, 0);
  }

  /** Adds instances until the fleet holds `total`, spread evenly; rejects on a failed handshake. */
  async grow(url: string, total: number, timeoutMs: number): Promise<void> {
    const n = this.workers.length;
    const asks = this.workers.map((w, i) => {
      const want = Math.floor(total / n) + (i < total % n ? 1 : 0);
      const more = Math.max(0, want - this.#counts[i]!);
      this.#counts[i]! += more;
      if (more > 0) w.send({ type: 'connect', url, count: more });
      return more > 0 ? w.waitFor<{ total: number; error?: string }>('connected', timeoutMs) : undefined;
    });
    for (const reply of await Promise.all(asks)) if (reply?.error) throw new Error(`simulated SDKs: ${reply.error}`);
  }

  /** Every instance accesses `key` so that the fleet's total is `totalRate`/s, from `startAt` (host ms, hostNow). */
  surge(key: string, totalRate: number, startAt: number, durationMs: number): void {
    const rate = totalRate / Math.max(1, this.size);
    for (const w of this.workers) w.send({ type: 'surge', key, rate, startAt, durationMs });
  }

  /**
   * When each instance saw `key` promoted (host ms, hostNow), when the hub decided it (its
   * Promote's `at`, Infinity if none arrived), and how many never saw it within `deadlineMs`.
   */
  async collect(key: string, deadlineMs: number): Promise<{ times: number[]; decidedAt: number; missing: number }> {
    for (const w of this.workers) w.send({ type: 'collect', key, deadlineMs });
    const results = await Promise.all(
      this.workers.map((w) =>
        w.waitFor<{ times: number[]; decidedAt: number | null; missing: number }>('promoted', deadlineMs + 15_000),
      ),
    );
    return {
      times: results.flatMap((r) => r.times),
      decidedAt: Math.min(...results.map((r) => r.decidedAt ?? Infinity)),
      missing: results.reduce((a, r) => a + r.missing, 0),
    };
  }

  /** Every instance asks for a lease every `everyMs` (0: stop), as an SDK does every leaseMs / 4. */
  leases(everyMs: number): void {
    for (const w of this.workers) w.send({ type: 'leases', everyMs });
  }

  /** Every instance sends a WebSocket ping every `everyMs` (0: stop), as an SDK does every pingIntervalMs. */
  pings(everyMs: number): void {
    for (const w of this.workers) w.send({ type: 'pings', everyMs });
  }

  /** Every instance reports `keys` keys (count 1, from a pool of `pool` names) every `everyMs` (0: stop). */
  reports(everyMs: number, keys: number, pool: number): void {
    for (const w of this.workers) w.send({ type: 'reports', everyMs, keys, pool });
  }

  /** While `on`, Invalidates are received but not answered with Applied. */
  silent(on: boolean): void {
    for (const w of this.workers) w.send({ type: 'silent', on });
  }

  /**
   * `holders` instances, spread evenly over the processes, each register every key of `keys`
   * (one Hold frame per key); resolves with the keys refused once every Held came back.
   */
  async hold(keys: string[], holders: number, timeoutMs = 30_000): Promise<{ refused: number }> {
    const n = this.workers.length;
    const before = this.#refused;
    const replies = this.workers.map((w, i) => {
      w.send({ type: 'hold', keys, holders: Math.floor(holders / n) + (i < holders % n ? 1 : 0) });
      return w.waitFor<{ refused: number }>('held', timeoutMs);
    });
    const all = await Promise.all(replies);
    this.#refused = all.reduce((a, r) => a + r.refused, 0);
    return { refused: this.#refused - before };
  }

  async stats(): Promise<FleetStats> {
    for (const w of this.workers) w.send({ type: 'stats' });
    const all = await Promise.all(this.workers.map((w) => w.waitFor<FleetStats>('stats', 10_000)));
    return {
      cpuMs: all.reduce((a, s) => a + s.cpuMs, 0),
      rss: all.reduce((a, s) => a + s.rss, 0),
      reports: all.reduce((a, s) => a + s.reports, 0),
      reportBytes: all.reduce((a, s) => a + s.reportBytes, 0),
      leaseAsks: all.reduce((a, s) => a + s.leaseAsks, 0),
      grants: all.reduce((a, s) => a + s.grants, 0),
      applied: all.reduce((a, s) => a + s.applied, 0),
      invalidates: all.reduce((a, s) => a + s.invalidates, 0),
      drops: all.reduce((a, s) => a + s.drops, 0),
    };
  }
}
