/**
 * One system's run in the versus benchmark (versus.bench.ts) and its small-scale test
 * (test/e2e/versus.test.ts): a fresh stack, the services, the traffic, the surge, then the
 * read-after-write probes calm and under each fault, while the traffic goes on.
 *
 * The stack: the items' redis-server behind the counting proxy (resp-proxy.worker.ts, every
 * connection of every service through it), a hub process for hotkey, a redis-server of its own for
 * a bus, and a TcpProxy (support/tcp-proxy.ts) in front of the reader service's invalidation path
 * (versus-systems.ts PATH_OF): service 1's hub link, its Redis connection (clientSideCache) or its bus
 * connection. Service 0 is the probes' writer, service 1 their reader; every service serves the
 * traffic. The items' Redis restarts from a snapshot taken just before (SAVE), so that no
 * acknowledged write is lost with it: a stale read after the restart is the cache's, not Redis's.
 */
import { Redis } from 'ioredis';
import { HUB_BIN, HubProcess, writeConfig, type HubProcessOptions } from '../support/hub-process.ts';
import { freePort, RedisServer } from '../support/redis-server.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';
import { CpuLimit } from '../support/cpu-limit.ts';
import { tempDir } from '../support/temp-dir.ts';
import { hostNow } from '../support/host-clock.ts';
import { delay, within } from '../support/wait.ts';
import { forkWorker, type Worker } from './harness.ts';
import { PATH_OF, type SystemName } from './versus-systems.ts';
import type { Probe, Window } from './versus-load.worker.ts';

export type { Probe, Window } from './versus-load.worker.ts';

export const FLASH_KEY = 'item:flash';
/** a Zipf item's value size; the flash key's is the plan's `flashBytes` */
const ITEM_BYTES = 100;
const APP = 'versus';
/** pairs after a fault are retried until they succeed or this passes */
const PAIRS_DEADLINE_MS = 20_000;
/** a probe loop across a restart ends `recoverMs` after the part is back, and at the latest after this */
const LOOP_CAP_MS = 60_000;

export interface Plan {
  /** service processes, one instance each (at least 2: the probes' writer and reader) */
  processes: number;
  zipfKeys: number;
  /** Zipf reads/s, all services together */
  zipfRate: number;
  /** the flash key's reads/s from the surge on, through the surge window */
  flashRate: number;
  /** the flash key's reads/s after the surge window, while the probes run (past the peak: a CPU-limited Redis drains) */
  tailRate: number;
  /** writes/s of Zipf items, from every service */
  writeRate: number;
  /** the flash key's value size */
  flashBytes: number;
  /**
   * the items' redis-server limited to this share of one core (support/cpu-limit.ts), so that the
   * surge's reads that reach it make it the bottleneck; undefined: no limit
   */
  redisCpuPercent?: number;
  /** traffic before the surge */
  beforeMs: number;
  /** the first part of it, left out of the figures before the surge (code still warming up) */
  warmMs: number;
  /** the surge's measured window: its first 2 s, then the steady state */
  surgeMs: number;
  bucketMs: number;
  /** write → read pairs, calm and right after each fault */
  pairs: number;
  afterPairs: number;
  /** how long the invalidation path is stalled */
  stallMs: number;
  /** how long Redis, the hub or the bus stays down */
  downMs: number;
  /** the probe loop goes on this long after a restarted part is back */
  recoverMs: number;
  faults: Fault[];
  /** SDK from its TypeScript sources (tests) rather than its build (the benchmark measures what a service loads) */
  fromSource: boolean;
}

export const FAULTS = ['stall', 'redis-restart', 'hub-restart'] as const;
export type Fault = (typeof FAULTS)[number];

/** the hub's rule: the flash key crosses it within a tenth of a second, the Zipf head stays well under */
export const RULES = [{ match: '*', threshold: 200, windowMs: 1000, hotMs: 60_000, cacheTtlMs: 30_000 }];
export const SURGE_HEAD_MS = 2000;

export interface Counts {
  gets: number;
  flashGets: number;
  flashBuckets: number[];
  getBuckets: number[];
}

export interface Result {
  system: SystemName;
  /** what reached Redis from the traffic's start to the surge window's end, per bucket */
  counts: Counts;
  flashFirst2s: number;
  flashSteadyPerSec: number;
  /** traffic before the surge / during it; `timeline` covers both, from the traffic's start */
  before: Window;
  surge: Window;
  timeline: Window;
  /** service CPU per request answered, µs: before the surge, during it */
  cpuPerRequest: { before: number; surge: number };
  rss: number[];
  heap: number[];
  entries: number[];
  /** redis-server CPU over the surge window, ms per s */
  redisCpuPerSec: number;
  trackingItems: number;
  probes: Partial<Record<ProbeName, Probe>>;
  /** faults that do not apply to the system, with why */
  notApplicable: Partial<Record<Fault, string>>;
  /** service processes that exited during the run: which, how, and after which step */
  crashes: string[];
  /** from the kill to the part answering again, ms: the items' Redis, the hub or the bus */
  outageMs: { redis?: number; hubOrBus?: number };
  /** how the items' redis-server was limited: `5 % of one core`, or why it was not */
  redisLimit: string;
}

export type ProbeName =
  | 'calm'
  | 'stall'
  | 'after stall'
  | 'redis restart'
  | 'after redis restart'
  | 'hub/bus restart'
  | 'after hub/bus restart';

const SERVICE = { tsx: false, execArgv: ['--import', 'tsx', '--expose-gc'] };
const SERVICE_FROM_SOURCE = { execArgv: ['--expose-gc'] };

interface Stack {
  redis: RedisServer;
  /** the items' Redis's CPU limit, or why there is none */
  limit: CpuLimit | string;
  counting: Worker;
  countingUrl: string;
  admin: Redis;
  hub?: { process: HubProcess; options: HubProcessOptions };
  bus?: RedisServer;
  stall?: TcpProxy;
  services: Worker[];
  ports: number[];
  load: Worker;
}

const redisUrl = (port: number) => `redis://127.0.0.1:${port}`;

async function startStack(system: SystemName, plan: Plan, log: (s: string) => void): Promise<Stack> {
  const dir = tempDir('hotkey-versus-');
  const redis = await RedisServer.start({ args: () => ['--dir', dir, '--dbfilename', 'versus.rdb'] });
  const limit = plan.redisCpuPercent === undefined ? 'no limit' : CpuLimit.create(plan.redisCpuPercent);
  if (typeof limit !== 'string') limit.add(redis.pid!);
  const counting = forkWorker(new URL('./resp-proxy.worker.ts', import.meta.url));
  counting.send({ type: 'start', redisPort: redis.port, flashKey: FLASH_KEY, suffix: true });
  const { port: countingPort } = await counting.waitFor<{ port: number }>('listening', 30_000);
  const countingUrl = redisUrl(countingPort);
  const admin = new Redis(redis.url);
  admin.on('error', () => undefined);
  const stack: Stack = {
    redis,
    limit,
    counting,
    countingUrl,
    admin,
    services: [],
    ports: [],
    load: undefined as never,
  };
  const path = PATH_OF[system];
  let direct: string | undefined;
  if (system.startsWith('hotkey')) {
    const config = writeConfig({ apps: { [APP]: { rules: RULES } } }, 'hotkey-versus-');
    const options: HubProcessOptions = {
      args: ['--config', config, '--port', String(await freePort())],
      readyTimeoutMs: 60_000,
      // from its build, as it is deployed: a restart then takes what a hub's start takes, not tsx's
      command: plan.fromSource ? undefined : [process.execPath, HUB_BIN],
    };
    stack.hub = { process: await HubProcess.start(options), options };
    direct = stack.hub.process.url;
  } else if (path === 'bus') {
    stack.bus = await RedisServer.start();
    direct = stack.bus.url;
  } else if (path === 'redis') direct = countingUrl;
  if (path) {
    const target = new URL(direct!);
    stack.stall = await TcpProxy.start(Number(target.port));
    log(`${path} path of service 1 through the stall proxy`);
  }
  const pathUrl = (i: number) => {
    if (!direct || i !== 1 || !stack.stall) return direct;
    const u = new URL(direct);
    u.port = String(stack.stall.port);
    return u.toString();
  };
  for (let i = 0; i < plan.processes; i++) {
    const w = forkWorker(
      new URL('./versus-service.worker.ts', import.meta.url),
      [],
      plan.fromSource ? SERVICE_FROM_SOURCE : SERVICE,
    );
    stack.services.push(w);
    w.send({
      type: 'start',
      system,
      open: { redisUrl: countingUrl, pathUrl: pathUrl(i), app: APP, instanceId: `svc-${i}` },
    });
  }
  stack.ports = (await Promise.all(stack.services.map((w) => w.waitFor<{ port: number }>('ready', 90_000)))).map(
    (r) => r.port,
  );
  stack.load = forkWorker(new URL('./versus-load.worker.ts', import.meta.url));
  return stack;
}

async function stopStack(s: Stack): Promise<void> {
  for (const w of s.services) w.send({ type: 'op', op: 'stop' });
  await Promise.allSettled([s.load?.kill(), ...s.services.map((w) => within('a service to exit', w.kill(), 10_000))]);
  s.admin.disconnect();
  await s.stall?.close();
  await s.counting.kill();
  await s.hub?.process.stop('SIGKILL');
  await s.bus?.stop();
  await s.redis.stop();
  if (typeof s.limit !== 'string') s.limit.close();
}

const ask = <T>(w: Worker, op: Record<string, unknown>, reply: string, ms: number) => {
  w.send({ type: 'op', ...op });
  return w.waitFor<T>(reply, ms);
};

async function redisCpuMs(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const f = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return (f('used_cpu_sys') + f('used_cpu_user')) * 1000;
}

async function usage(s: Stack): Promise<{ cpuMs: number; served: number }> {
  const all = await Promise.all(
    s.services.map((w) => ask<{ cpuMs: number; served: number }>(w, { op: 'usage' }, 'usage', 10_000)),
  );
  return { cpuMs: all.reduce((a, u) => a + u.cpuMs, 0), served: all.reduce((a, u) => a + u.served, 0) };
}

/** Runs `system` through `plan`; `log` gets one line per step. */
export async function runSystem(system: SystemName, plan: Plan, log: (s: string) => void = () => {}): Promise<Result> {
  const stack = await startStack(system, plan, log);
  try {
    return await measure(system, plan, stack, log);
  } finally {
    await stopStack(stack);
  }
}

async function measure(system: SystemName, plan: Plan, s: Stack, log: (s: string) => void): Promise<Result> {
  await ask(
    s.services[0]!,
    { op: 'seed', zipfKeys: plan.zipfKeys, flashKey: FLASH_KEY, flashBytes: plan.flashBytes, itemBytes: ITEM_BYTES },
    'seeded',
    120_000,
  );
  const startAt = hostNow() + 200;
  const surgeAt = startAt + plan.beforeMs;
  const endAt = surgeAt + plan.surgeMs;
  const buckets = Math.ceil((endAt - startAt) / plan.bucketMs);
  s.counting.send({ type: 'proxy', op: 'window', startAt, bucketMs: plan.bucketMs, buckets });
  s.load.send({
    type: 'op',
    op: 'traffic',
    ports: s.ports,
    zipfKeys: plan.zipfKeys,
    zipfRate: plan.zipfRate,
    flashRate: plan.flashRate,
    tailRate: plan.tailRate,
    tailAt: endAt,
    writeRate: plan.writeRate,
    flashKey: FLASH_KEY,
    surgeAt,
    seed: 7,
  });
  const warmAt = startAt + plan.warmMs;
  await delay(Math.max(0, warmAt - hostNow()));
  const u0 = await usage(s);
  await delay(Math.max(0, surgeAt - hostNow()));
  const u1 = await usage(s);
  const r1 = await redisCpuMs(s.admin);
  const t1 = hostNow();
  log('surge');
  await delay(Math.max(0, endAt - hostNow()));
  const u2 = await usage(s);
  const r2 = await redisCpuMs(s.admin);
  const t2 = hostNow();
  s.counting.send({ type: 'proxy', op: 'read' });
  const counts = await s.counting.waitFor<Counts>('counts', 10_000);
  const trackingItems = Number(/^tracking_total_items:(\d+)/m.exec(await s.admin.info('stats'))?.[1] ?? NaN);
  const memory = await Promise.all(
    s.services.map((w) => ask<{ rss: number; heap: number; entries: number }>(w, { op: 'memory' }, 'memory', 30_000)),
  );
  const windowOf = (from: number, to: number) =>
    ask<Window>(s.load, { op: 'window', from, to, bucketMs: plan.bucketMs }, 'window', 30_000);
  const [before, surge, timeline] = [
    await windowOf(warmAt, surgeAt),
    await windowOf(surgeAt, endAt),
    await windowOf(startAt, endAt),
  ];
  const head = Math.round(SURGE_HEAD_MS / plan.bucketMs);
  const first = Math.round(plan.beforeMs / plan.bucketMs);
  const flashFirst2s = counts.flashBuckets.slice(first, first + head).reduce((a, n) => a + n, 0);
  const steady = counts.flashBuckets.slice(first + head);
  const perCpu = (a: { cpuMs: number; served: number }, b: { cpuMs: number; served: number }) =>
    ((b.cpuMs - a.cpuMs) * 1000) / Math.max(1, b.served - a.served);

  const crashes: string[] = [];
  const seen = new Set<number>();
  /** notes a service process that exited since the last look */
  const look = (step: string) =>
    s.services.forEach((w, i) => {
      const { exitCode, signalCode } = w.child;
      if (seen.has(i) || (exitCode === null && signalCode === null)) return;
      seen.add(i);
      crashes.push(`service ${i} exited (${signalCode ?? `code ${exitCode}`}) during ${step}`);
      log(crashes.at(-1)!);
    });
  look('the surge');
  const probes: Partial<Record<ProbeName, Probe>> = {};
  const notApplicable: Partial<Record<Fault, string>> = {};
  const io = { writer: s.ports[0], reader: s.ports[1], key: FLASH_KEY, bytes: plan.flashBytes };
  const told = (name: ProbeName, p: Probe) => {
    log(
      `${name}: ${p.stale} stale of ${p.reads}, ${p.acked} writes acked, ${p.writeErrors} write and ${p.readErrors} read errors${p.firstError ? ` (first: ${p.firstError})` : ''}${p.staleSeen.length ? `; stale: ${JSON.stringify(p.staleSeen)}` : ''}`,
    );
    return p;
  };
  const pairs = async (name: ProbeName, n: number) => {
    const op = { op: 'pairs', n, deadlineMs: PAIRS_DEADLINE_MS, ...io };
    probes[name] = told(name, await ask<Probe>(s.load, op, 'probe', PAIRS_DEADLINE_MS + 10_000));
  };
  const loop = async (name: ProbeName, ms: number) => {
    probes[name] = told(name, await ask<Probe>(s.load, { op: 'loop', ms, ...io }, 'probe', ms + 30_000));
  };
  await pairs('calm', plan.pairs);
  look('the calm probes');

  if (plan.faults.includes('stall')) {
    if (!s.stall) notApplicable.stall = 'no invalidation path to stall';
    else {
      s.stall.freeze();
      try {
        await loop('stall', plan.stallMs);
      } finally {
        s.stall.thaw();
      }
      await pairs('after stall', plan.afterPairs);
      look('the stall');
    }
  }

  const outageMs: Result['outageMs'] = {};
  /**
   * The probe loop from `kill` on, through the part's return (`back`), and `recoverMs` after it;
   * resolves how long the part was away.
   */
  const across = async (name: ProbeName, kill: () => Promise<void>, back: () => Promise<void>) => {
    await kill();
    const killed = hostNow();
    const during = loop(name, LOOP_CAP_MS);
    try {
      await delay(plan.downMs);
      await back();
    } finally {
      s.load.send({ type: 'op', op: 'loop-until', at: hostNow() + plan.recoverMs });
    }
    const away = hostNow() - killed;
    await during;
    return away;
  };

  if (plan.faults.includes('redis-restart')) {
    // a snapshot first: the restarted server has every acknowledged write
    await s.admin.save();
    outageMs.redis = await across(
      'redis restart',
      () => s.redis.stop(),
      async () => {
        await s.redis.restart();
        if (typeof s.limit !== 'string') s.limit.add(s.redis.pid!);
      },
    );
    await pairs('after redis restart', plan.afterPairs);
    look('the Redis restart');
  }

  if (plan.faults.includes('hub-restart')) {
    const { hub, bus } = s;
    if (hub) {
      outageMs.hubOrBus = await across(
        'hub/bus restart',
        async () => void (await hub.process.stop('SIGKILL')),
        async () => {
          hub.process = await HubProcess.start(hub.options);
        },
      );
    } else if (bus) {
      outageMs.hubOrBus = await across(
        'hub/bus restart',
        () => bus.stop(),
        () => bus.restart(),
      );
    } else notApplicable['hub-restart'] = 'no hub or bus';
    if (hub || bus) {
      log(`${hub ? 'hub' : 'bus'} away ${outageMs.hubOrBus!.toFixed(0)} ms`);
      await pairs('after hub/bus restart', plan.afterPairs);
      look(`the ${hub ? 'hub' : 'bus'} restart`);
    }
  }
  await ask(s.load, { op: 'stop' }, 'stopped', 30_000);

  return {
    system,
    counts,
    flashFirst2s,
    flashSteadyPerSec: steady.length
      ? steady.reduce((a, n) => a + n, 0) / ((steady.length * plan.bucketMs) / 1000)
      : Number.NaN,
    before,
    surge,
    timeline,
    cpuPerRequest: { before: perCpu(u0, u1), surge: perCpu(u1, u2) },
    rss: memory.map((m) => m.rss),
    heap: memory.map((m) => m.heap),
    entries: memory.map((m) => m.entries),
    redisCpuPerSec: ((r2 - r1) * 1000) / (t2 - t1),
    trackingItems,
    probes,
    notApplicable,
    crashes,
    outageMs,
    redisLimit: typeof s.limit === 'string' ? s.limit : `${s.limit.percent} % of one core`,
  };
}
