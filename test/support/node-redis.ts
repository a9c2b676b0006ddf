/**
 * Helpers of the node-redis adapter's tests: closing every node-redis client a test made (one
 * never connected throws on destroy), waiting until reads of a key are answered without a GET
 * reaching Redis (counted by the caller, e.g. INFO commandstats), and a key on each Cluster master.
 */
import * as assert from 'uvu/assert';
import { hashSlot } from '@hotkey/sdk/ioredis';
import { waitFor } from './wait.ts';

/** Destroys each client, connected or not. */
export function destroyAll(opened: ReadonlyArray<{ destroy(): void }>): void {
  for (const c of opened) {
    try {
      c.destroy();
    } catch {
      // never connected
    }
  }
}

/** Reads `key` until it answers `value` and two more reads send no GET to Redis (`gets` counts them). */
export async function servedLocally(
  c: { get(key: string): Promise<unknown> },
  key: string,
  value: string,
  gets: () => Promise<number>,
  timeoutMs = 5000,
): Promise<void> {
  await waitFor(
    `${key} served locally as ${value}`,
    async () => {
      if ((await c.get(key)) !== value) return false;
      const before = await gets();
      const got = [await c.get(key), await c.get(key)];
      return got.every((v) => v === value) && (await gets()) === before;
    },
    timeoutMs,
  );
}

/** Connects `c` (errors heard, so a dropped socket does not crash the test) and notes it in `opened` for `destroyAll`. */
export async function connectNoted<
  C extends { on(event: 'error', listener: () => void): unknown; connect(): Promise<unknown>; destroy(): void },
>(c: C, opened: Array<{ destroy(): void }>): Promise<C> {
  c.on('error', () => {});
  opened.push(c);
  await c.connect();
  return c;
}

/** A key named `prefix:<n>` on each master of `c` (a node-redis Cluster), by its slot map: master port → key. */
export function keyPerMaster(
  c: { slots: ReadonlyArray<{ master: { port: number } } | undefined> },
  rc: { ports: readonly number[] },
  prefix: string,
): Map<number, string> {
  const byPort = new Map<number, string>();
  for (let i = 0; byPort.size < rc.ports.length && i < 1000; i++) {
    const key = `${prefix}:${i}`;
    const port = c.slots[hashSlot(key)]?.master.port;
    if (port !== undefined && !byPort.has(port)) byPort.set(port, key);
  }
  assert.is(byPort.size, rc.ports.length, 'a key on every master');
  return byPort;
}
