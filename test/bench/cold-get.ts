/**
 * CPU per cold GET, wrapped against plain, the two clients alternated round by round in one
 * process: what the ioredis-get, node-redis-get and writecost benchmarks measure alike. A cold GET
 * reads a key never read before (a key read again and again would surge and be served locally),
 * so it is the wrapper's full price for a key that is not hot: counting, the surge checks, the
 * command hook, the reply's way back. CPU is user + system of the whole process.
 *
 * The wrapper is timed as users run it: the SDK compiled by tsc (`shippedSdk`), not through tsx,
 * whose esbuild transform keeps function names by calling `__name(fn, "…")` (an
 * Object.defineProperty) wherever a function is created — a price per closure that no published
 * build pays, and a cold GET creates several.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { HotKeyClient } from '@hotkey/sdk';
import type { withHotKeys as IoredisWrap } from '@hotkey/sdk/ioredis';
import type { withHotKeys as NodeRedisWrap } from '@hotkey/sdk/node-redis';
import type { BenchRow } from './harness.ts';
import { peerWrappedNodeRedis, type PeerWrappedNodeRedis } from '../support/peer-wrapped-node-redis.ts';
import { peerWrappedRedis, type PeerWrappedRedis } from '../support/peer-wrapped-redis.ts';

/** The SDK's entry points from one build. */
export interface SdkBuild {
  HotKeyClient: typeof HotKeyClient;
  ioredis: typeof IoredisWrap;
  nodeRedis: typeof NodeRedisWrap;
}

const SDK_DIR = fileURLToPath(new URL('../../sdk/', import.meta.url));
/** where `shippedSdk` builds: under sdk/ so that the build resolves the SDK's dependencies; a `dist` (git ignores it) */
const SHIPPED_DIR = `${SDK_DIR}.bench/dist`;

/**
 * The SDK's JavaScript as its package build emits it (sdk/tsconfig.build.json, comments
 * removed), compiled now from the current source into sdk/.bench/dist (a few seconds), so that a
 * benchmark never times a stale build.
 */
export async function shippedSdk(): Promise<SdkBuild> {
  const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));
  execFileSync(
    process.execPath,
    [
      tsc,
      '-p',
      `${SDK_DIR}tsconfig.build.json`,
      '--removeComments',
      '--declaration',
      'false',
      '--noCheck',
      '--outDir',
      SHIPPED_DIR,
    ],
    { stdio: 'inherit', timeout: 180_000 },
  );
  const [index, ioredis, nodeRedis] = await Promise.all([
    import(`${SHIPPED_DIR}/index.js`),
    import(`${SHIPPED_DIR}/ioredis.js`),
    import(`${SHIPPED_DIR}/node-redis.js`),
  ]);
  return { HotKeyClient: index.HotKeyClient, ioredis: ioredis.withHotKeys, nodeRedis: nodeRedis.withHotKeys };
}

export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/** CPU ns per call of `run`, `lanes` calls in flight all along (each lane awaits its call before the next). */
export async function cpuPerOp(ops: number, lanes: number, run: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const cpu0 = process.cpuUsage();
  const lane = async () => {
    while (next < ops) await run(next++);
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  const cpu = process.cpuUsage(cpu0);
  return ((cpu.user + cpu.system) * 1000) / ops;
}

/** Anything with a `get(key)` returning a promise: an ioredis or a node-redis client. */
interface Getter {
  get(key: string): Promise<unknown>;
}

export interface ColdGetOptions {
  /** rounds, each measuring plain then wrapped; the median of each is reported */
  rounds: number;
  /** GETs per measurement */
  ops: number;
  /** GETs in flight all along */
  inFlight: number;
  /** prefix of the never-read keys, so that two measurements in one process never share one */
  prefix: string;
}

/** Median CPU ns per cold GET of `plain` and `wrapped`, alternating, `rounds` each. */
export async function coldGetCpu(
  plain: Getter,
  wrapped: Getter,
  opts: ColdGetOptions,
): Promise<{ plain: number; wrapped: number }> {
  let n = 0;
  const fresh = () => `${opts.prefix}:${n++}`;
  const p: number[] = [];
  const w: number[] = [];
  // one uncounted round each: the first calls run unoptimised code
  await cpuPerOp(opts.ops, opts.inFlight, () => plain.get(fresh()));
  await cpuPerOp(opts.ops, opts.inFlight, () => wrapped.get(fresh()));
  for (let round = 0; round < opts.rounds; round++) {
    p.push(await cpuPerOp(opts.ops, opts.inFlight, () => plain.get(fresh())));
    w.push(await cpuPerOp(opts.ops, opts.inFlight, () => wrapped.get(fresh())));
  }
  return { plain: median(p), wrapped: median(w) };
}

/** Cold GETs, 100 in flight, through the ioredis wrapper and through plain ioredis. */
export function ioredisColdGet(
  fixture: PeerWrappedRedis,
  rounds: number,
  ops = 20_000,
): Promise<{ plain: number; wrapped: number }> {
  return coldGetCpu(fixture.plain, fixture.wrapped, { rounds, ops, inFlight: 100, prefix: 'cold:ioredis' });
}

/** Cold GETs, 100 in flight, through the node-redis adapter and through plain node-redis. */
export function nodeRedisColdGet(
  fixture: PeerWrappedNodeRedis,
  rounds: number,
  ops = 20_000,
): Promise<{ plain: number; wrapped: number }> {
  return coldGetCpu(fixture.plain, fixture.wrapped, { rounds, ops, inFlight: 100, prefix: 'cold:node-redis' });
}

/** CPU ns per cold GET, plain and wrapped */
export type ColdPair = { plain: number; wrapped: number };

/** Cold GETs through both adapters of `sdk`, each against its plain client, `rounds` each (ioredis first). */
export async function coldGets(sdk: SdkBuild, rounds: number): Promise<{ ioredis: ColdPair; nodeRedis: ColdPair }> {
  const io = await peerWrappedRedis(sdk.ioredis, sdk.HotKeyClient);
  let ioredis: ColdPair;
  try {
    ioredis = await ioredisColdGet(io, rounds);
  } finally {
    await io.close();
  }
  const nr = await peerWrappedNodeRedis(sdk.nodeRedis, sdk.HotKeyClient);
  try {
    return { ioredis, nodeRedis: await nodeRedisColdGet(nr, rounds) };
  } finally {
    await nr.close();
  }
}

/** The two rows of `cold`: wrapped ÷ plain per adapter, against the target of 1.1. */
export function coldRows(bench: string, cold: { ioredis: ColdPair; nodeRedis: ColdPair }): BenchRow[] {
  const row = (client: string, c: ColdPair): BenchRow => ({
    bench,
    metric: `cold GET CPU, ${client}, 100 in flight: wrapped ÷ plain`,
    ours: c.wrapped / c.plain,
    unit: '×',
    better: 'lower',
    target: { reach: 1.1 },
    note: `${Math.round(c.wrapped)} ns/op wrapped, ${Math.round(c.plain)} plain; alternating`,
  });
  return [row('ioredis', cold.ioredis), row('node-redis', cold.nodeRedis)];
}
