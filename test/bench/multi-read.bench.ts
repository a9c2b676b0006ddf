/**
 * Benchmark 16 — multi-key reads through the ioredis wrapper (sdk/src/ioredis/multi-read.ts),
 * beside a plain client in the same run, on a real redis-server: an awaited `mget` of 10 keys,
 * one call at a time (ns per call, wall clock), and the Redis commands each call cost (INFO
 * commandstats of the server, every connection counted: the wrapper's tracking connections too).
 * - 10 hot keys, all cached: the wrapper sends nothing;
 * - 8 hot cached + 2 cold keys: the wrapper sends one MGET of the 2.
 * A protocol peer stands in for the hub and promotes the keys (no detection in the loop).
 *
 *   node --conditions=@hotkey/source --import tsx test/bench/multi-read.bench.ts [--quick]
 */
import { Redis } from 'ioredis';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { allCommandCalls } from '../support/commandstats.ts';
import { peerWrappedRedis } from '../support/peer-wrapped-redis.ts';
import { waitFor } from '../support/wait.ts';
import { benchMain, measureNsPerOpAsync, type BenchRow } from './harness.ts';

const HOT = Array.from({ length: 10 }, (_, i) => `item:hot:${i}`);
const MIXED = [...HOT.slice(0, 8), 'item:cold:0', 'item:cold:1'];

benchMain(async ({ quick }) => {
  const fixture = await peerWrappedRedis(withHotKeys);
  const { hk, plain, wrapped } = fixture;
  const admin = new Redis(fixture.server.url);
  try {
    for (const key of [...HOT, 'item:cold:0', 'item:cold:1']) await plain.set(key, 'v'.repeat(64));
    await fixture.promote(HOT);
    for (const key of HOT) {
      await waitFor(
        `${key} cached`,
        async () => {
          const hits = hk.stats().hits;
          await wrapped.get(key);
          return hk.stats().hits - hits === 1;
        },
        5000,
        2,
      );
    }
    // the replies must agree before anything is timed
    if (JSON.stringify(await wrapped.mget(MIXED)) !== JSON.stringify(await plain.mget(MIXED)))
      throw new Error('wrapped and plain MGET disagree');

    /** Redis commands executed per call of `run`, over `calls` awaited calls */
    const commandsPer = async (calls: number, run: () => Promise<unknown>): Promise<number> => {
      await admin.config('RESETSTAT');
      for (let i = 0; i < calls; i++) await run();
      return (await allCommandCalls(admin, ['config'])) / calls;
    };
    const opts = quick ? { rounds: 3, roundMs: 50, warmupMs: 100 } : { rounds: 7, roundMs: 200, warmupMs: 300 };
    const time = (client: Redis, keys: string[]) =>
      measureNsPerOpAsync(async (n) => {
        let last: unknown;
        for (let i = 0; i < n; i++) {
          last = await client.mget(keys);
          // local replies are microtasks only: yield now and then, so that the SDK's link and
          // lease keep running (both variants alike)
          if ((i & 63) === 63) await new Promise(setImmediate);
        }
        return last;
      }, opts);
    const calls = quick ? 200 : 2000;
    const cases = [
      { name: '10 hot keys', keys: HOT, note: 'baseline: plain ioredis, same server, same run' },
      { name: '8 hot + 2 cold keys', keys: MIXED, note: 'the wrapper sends one MGET of the 2 cold keys' },
    ];
    const rows: BenchRow[] = [];
    for (const { name, keys, note } of cases) {
      // alternated, so that drift on a shared machine falls on both
      const plainNs = (await time(plain, keys)).median;
      const wrappedNs = (await time(wrapped, keys)).median;
      const plainCommands = await commandsPer(calls, () => plain.mget(keys));
      const wrappedCommands = await commandsPer(calls, () => wrapped.mget(keys));
      const row = { bench: '16 multi-key reads', better: 'lower' } as const;
      rows.push(
        {
          ...row,
          metric: `awaited mget, ${name}`,
          ours: Math.round(wrappedNs),
          baseline: Math.round(plainNs),
          unit: 'ns/call',
          note,
        },
        {
          ...row,
          metric: `Redis commands per mget, ${name}`,
          ours: wrappedCommands,
          baseline: plainCommands,
          unit: 'commands',
          note: `${calls} calls each`,
        },
      );
    }
    return rows;
  } finally {
    admin.disconnect();
    await fixture.close();
  }
});
