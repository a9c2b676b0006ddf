/**
 * The two promises every guide's example is held to, measured the same way for each stack:
 *
 *   served locally    once a key is hot, reads of it on either instance send no command to Redis
 *                     (every command Redis executed, from INFO commandstats, but the probe's INFO
 *                     and PING: the heartbeat of the SDK's tracking connections, one a second on
 *                     each while it holds hot keys, whatever the reads);
 *   read-your-writes  after a write acknowledged on instance A, instance B's next read returns it:
 *                     the stale reads of B, counted over `rounds` writes, each made while B held the
 *                     old value in memory.
 *
 * An example is opened twice (instances A and B of one app) as a `Store`: what the example returns,
 * or, for a service, its HTTP routes. The hub and redis-server are the test's. Every wait has a
 * deadline.
 */
import * as assert from 'uvu/assert';
import { allCommandCalls } from '../support/commandstats.ts';
import { waitFor } from '../support/wait.ts';

export interface Store<V> {
  get(id: string): Promise<V | null | undefined>;
  set(id: string, value: V): Promise<unknown>;
}

interface InfoReader {
  info(section: string): Promise<string>;
}

/** Commands Redis executed so far, the probe's INFO and the tracking heartbeat's PING aside. */
export const redisCommands = (probe: InfoReader) => (): Promise<number> => allCommandCalls(probe, ['info', 'ping']);

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Reads `id` on every store until `reads` rounds in a row reach Redis with no command (the key is hot and cached everywhere). */
export async function untilServedLocally<V>(
  stores: readonly Store<V>[],
  id: string,
  commands: () => Promise<number>,
  timeoutMs = 10_000,
  reads = 20,
): Promise<void> {
  await waitFor(
    `${id} served from memory on every instance`,
    async () => {
      const before = await commands();
      for (let i = 0; i < reads; i++) for (const s of stores) await s.get(id);
      return (await commands()) === before;
    },
    timeoutMs,
    5,
  );
}

/** Commands Redis executed while each store read `id` `reads` times (each read checked against `expected`). */
export async function commandsDuring<V>(
  stores: readonly Store<V>[],
  id: string,
  expected: V,
  commands: () => Promise<number>,
  reads = 200,
): Promise<number> {
  const before = await commands();
  for (let i = 0; i < reads; i++)
    for (const s of stores) {
      const got = await s.get(id);
      if (!same(got, expected)) assert.unreachable(`read ${i} of ${id} gave ${JSON.stringify(got)}`);
    }
  return (await commands()) - before;
}

export interface StaleCount {
  rounds: number;
  /** B's first read after A's acknowledged write returned the old value */
  stale: number;
  /** A's own read after its write returned the old value */
  staleOwn: number;
  /** rounds in which B answered the reads before the write from memory (no Redis command) */
  heldInMemory: number;
}

/**
 * `rounds` writes on `a`, each of `value(i)` after `b` read `id` twice (so that it holds the old
 * value, if it caches); then `b`'s next read, and `a`'s, compared with what was written.
 */
export async function staleAfterWrites<V>(
  a: Store<V>,
  b: Store<V>,
  id: string,
  value: (i: number) => V,
  rounds: number,
  commands: () => Promise<number>,
): Promise<StaleCount> {
  const out: StaleCount = { rounds, stale: 0, staleOwn: 0, heldInMemory: 0 };
  for (let i = 1; i <= rounds; i++) {
    await b.get(id);
    const before = await commands();
    await b.get(id);
    if ((await commands()) === before) out.heldInMemory++;
    await a.set(id, value(i));
    if (!same(await b.get(id), value(i))) out.stale++;
    if (!same(await a.get(id), value(i))) out.staleOwn++;
  }
  return out;
}

/**
 * Writes `written` on `a`, then polls `b` until it reads it; resolves the ms from A's acknowledgement
 * to B's first read of the new value, or undefined when B still read the old one after `timeoutMs`.
 */
export async function msUntilSeen<V>(a: Store<V>, b: Store<V>, id: string, written: V, timeoutMs: number) {
  await a.set(id, written);
  const acked = performance.now();
  while (performance.now() - acked < timeoutMs) {
    if (same(await b.get(id), written)) return performance.now() - acked;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return undefined;
}
