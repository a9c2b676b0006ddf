/**
 * Staleness of cached hot values after writes the SDK does not make (plain ioredis, redis-cli):
 * the time from the write's reply to the moment every reader instance answers a read with the
 * new value. Readers are wrapped ioredis clients, each with its own HotKeyClient; polls yield to
 * the event loop between reads (a value answered locally resolves without I/O). Shared by the
 * tracking tests and test/bench/tracking.bench.ts. Every wait has a deadline.
 */
import type { Cluster, Redis } from 'ioredis';
import type { HotKeyClient } from '@hotkey/sdk';
import type { Hub } from '@hotkey/hub';
import { withHotKeys, type WithHotKeysOptions } from '@hotkey/sdk/ioredis';
import type { E2e } from './e2e.ts';
import { promoteInProcess } from './promote.ts';
import { waitFor } from './wait.ts';

export interface Reader<C extends Redis | Cluster = Redis | Cluster> {
  hk: HotKeyClient;
  redis: C;
}

/** `n` SDK instances of the e2e hub's app `shop`, each with its own client from `client()`, wrapped. */
export async function wrappedReaders<C extends Redis | Cluster>(
  e2e: E2e<Hub>,
  n: number,
  client: () => C,
  wrap: WithHotKeysOptions = {},
): Promise<Reader<C>[]> {
  const hks = await e2e.sdks(n, () => ({ flushIntervalMs: 20 }));
  return hks.map((hk) => ({ hk, redis: withHotKeys(client(), hk, wrap) }));
}

/** Promotes `key` of app `shop` at the e2e hub and waits until every reader has it hot. */
export function promoteOn(e2e: E2e<Hub>, key: string, on: readonly Reader[]): Promise<void> {
  return promoteInProcess(
    e2e.hub,
    'shop',
    key,
    on.map((r) => r.hk),
  );
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Reads `key` until two reads in a row are local hits on the reader's HotKeyClient: its value is
 * cached and vouched for (a value the wrapper cannot vouch for is dropped on the first read, so
 * the second would be a load). Returns the value.
 */
export async function warm(reader: Reader, key: string, timeoutMs = 3000): Promise<unknown> {
  const got = await waitFor(
    `${key} cached on ${reader.hk.instanceId}`,
    async () => {
      const hits = reader.hk.stats().hits;
      await reader.redis.get(key);
      const value = await reader.redis.get(key);
      return reader.hk.stats().hits - hits === 2 ? { value } : undefined;
    },
    timeoutMs,
    2,
  );
  return got.value;
}

/** Polls reads of `key` until one returns `value`; resolves the time it did. */
export async function readsNew(reader: Reader, key: string, value: string, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if ((await reader.redis.get(key)) === value) return performance.now();
    if (performance.now() > deadline)
      throw new Error(`${reader.hk.instanceId} still serves a stale ${key} ${timeoutMs} ms after the write`);
    await tick();
  }
}

/**
 * `writes` outside writes, one at a time over `keys` (each warm on every reader first); returns
 * each write's staleness in ms: reply of the write → the last reader reading the new value (0 when
 * every reader had it before the writer heard its reply).
 */
export async function measureStaleness(opts: {
  readers: readonly Reader[];
  keys: readonly string[];
  writes: number;
  write: (key: string, value: string) => Promise<unknown>;
  /** a write not seen by every reader within this fails the measurement @default 2000 */
  timeoutMs?: number;
}): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < opts.writes; i++) {
    const key = opts.keys[i % opts.keys.length]!;
    for (const reader of opts.readers) await warm(reader, key);
    const value = `w${i}-${Math.random().toString(36).slice(2)}`;
    await opts.write(key, value);
    const wrote = performance.now();
    const seen = await Promise.all(opts.readers.map((r) => readsNew(r, key, value, opts.timeoutMs ?? 2000)));
    out.push(Math.max(0, Math.max(...seen) - wrote));
  }
  return out;
}

export function summary(ms: readonly number[]): { n: number; p50: number; p99: number; max: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
  return { n: sorted.length, p50: at(50), p99: at(99), max: sorted[sorted.length - 1] ?? Number.NaN };
}
