/**
 * A CPU limit for processes a test or benchmark started (a redis-server made the bottleneck): a
 * Linux control group of their own with a CFS bandwidth quota of `percent` of one core. A process
 * under it runs freely while it has little to do and is throttled once it used its share of a
 * period, as a node at its limit is (kernel docs, "CFS Bandwidth Control", scheduler/sched-bwc).
 * The period is 10 ms, longer below 10 % (the kernel's smallest quota is 1 ms). cgroup v2
 * (`cpu.max`) where the cpu controller is on the unified hierarchy, else v1 (`cpu.cfs_quota_us`).
 * Where neither can be written (not root, no cpu controller), `create` returns the reason
 * instead, for the caller to report.
 *
 *   const limit = CpuLimit.create(5);       // CpuLimit | string
 *   if (typeof limit !== 'string') limit.add(redis.pid);  … limit.close();
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** the shortest CFS period used: a throttled process waits at most about this long */
const PERIOD_US = 10_000;
/** the kernel's smallest quota */
const MIN_QUOTA_US = 1000;

function cpuOnUnified(root: string): boolean {
  try {
    return readFileSync(join(root, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('cpu');
  } catch {
    return false;
  }
}

export class CpuLimit {
  readonly dir: string;
  readonly percent: number;
  readonly #tasks: string;

  private constructor(dir: string, percent: number, tasks: string) {
    this.dir = dir;
    this.percent = percent;
    this.#tasks = tasks;
  }

  /** A new group limited to `percent` (0 < percent ≤ 100) of one core, or why there can be none here. */
  static create(percent: number): CpuLimit | string {
    if (!(percent > 0 && percent <= 100)) throw new RangeError(`CpuLimit: percent must be in (0, 100], got ${percent}`);
    const quota = Math.max(MIN_QUOTA_US, Math.round((PERIOD_US * percent) / 100));
    const period = Math.round((quota * 100) / percent);
    const name = `hotkey-cpu-limit-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    const attempts: Array<[string, (dir: string) => void, string]> = [
      ['/sys/fs/cgroup', (d) => writeFileSync(join(d, 'cpu.max'), `${quota} ${period}`), 'cgroup.procs'],
      [
        '/sys/fs/cgroup/cpu',
        (d) => {
          writeFileSync(join(d, 'cpu.cfs_period_us'), String(period));
          writeFileSync(join(d, 'cpu.cfs_quota_us'), String(quota));
        },
        'tasks',
      ],
    ];
    const why: string[] = [];
    for (const [root, limit, tasks] of attempts) {
      if (root === '/sys/fs/cgroup' ? !cpuOnUnified(root) : !existsSync(join(root, 'cpu.cfs_quota_us'))) {
        why.push(`${root}: no cpu controller`);
        continue;
      }
      const dir = join(root, name);
      try {
        mkdirSync(dir);
        limit(dir);
        return new CpuLimit(dir, Math.round((quota * 1000) / period) / 10, join(dir, tasks));
      } catch (err) {
        why.push(`${root}: ${(err as Error).message}`);
        try {
          rmdirSync(dir);
        } catch {
          // never made
        }
      }
    }
    return `no CPU limit here (${why.join('; ')})`;
  }

  /** Puts process `pid` under the limit (a restarted process is a new pid: add it again). */
  add(pid: number): void {
    writeFileSync(this.#tasks, String(pid));
  }

  /** Removes the group; its processes must have exited (or they keep it). */
  close(): void {
    try {
      rmdirSync(this.dir);
    } catch {
      // a process still in it: the kernel keeps the group until it exits
    }
  }
}
