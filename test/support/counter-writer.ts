/**
 * A writer process for the zero-loss counter test: a real SDK client and a wrapped ioredis client
 * (standalone or Cluster) that INCRBY / DECRBY one key with random amounts, `inflight` at a time,
 * in bursts (hot, sharded) and pauses (cool, demoted, folded). Every op is logged to `log` with
 * synchronous writes: `I <id> <delta>` before it is sent, `A <id>` once its reply was observed.
 * An op whose `A` line is missing (the process was killed) may or may not have been applied.
 *
 * argv: hubUrl redisSpec(json: {port} | {nodes}) key log durationMs incrementsOnly(0|1)
 */
import { openSync, writeSync } from 'node:fs';
import { Cluster, Redis } from 'ioredis';
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { delay } from './wait.ts';

const [hubUrl, spec, key, log, durationText, incrementsOnly] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const fd = openSync(log, 'a');
const target = JSON.parse(spec) as { port?: number; nodes?: { host: string; port: number }[] };
const hk = new HotKeyClient({ app: 'shop', hubs: [hubUrl], flushIntervalMs: 20 });
await hk.ready({ signal: AbortSignal.timeout(10_000) });
const raw =
  target.nodes !== undefined
    ? new Cluster(target.nodes, { redisOptions: { maxRetriesPerRequest: 3 } })
    : new Redis(target.port!, '127.0.0.1', { maxRetriesPerRequest: 3 });
const redis = withHotKeys(raw, hk, { tracking: false, awaitInvalidation: false });

const end = Date.now() + Number(durationText);
let next = 0;
async function worker(): Promise<void> {
  while (Date.now() < end) {
    // bursts of 1.5 s, pauses of 1.2 s: promotions, demotions and folds happen under load
    const phase = (Date.now() % 2700) / 1000;
    if (phase > 1.5) {
      await delay(50);
      continue;
    }
    const id = `${process.pid}-${next++}`;
    const amount = 1 + Math.floor(Math.random() * 1_000_000);
    const delta = incrementsOnly === '1' || Math.random() < 0.7 ? amount : -amount;
    writeSync(fd, `I ${id} ${delta}\n`);
    if (delta > 0) await redis.incrby(key, delta);
    else await redis.decrby(key, -delta);
    writeSync(fd, `A ${id}\n`);
  }
}
await Promise.all(Array.from({ length: 4 }, worker));
await redis.quit();
await hk.close();
process.exit(0);
