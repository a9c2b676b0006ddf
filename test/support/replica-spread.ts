/**
 * The spread check of the replica-key tests (test/cluster/*-replicas.test.ts): `n` GETs of a hot
 * key through a wrapped client, 50 in flight, every one answering `value`, then each master's
 * GET calls (INFO commandstats, reset first) must be at least a fifth of all: no master carries
 * the key's reads alone. Returns the calls per master.
 */
import * as assert from 'uvu/assert';
import { callsIn } from './commandstats.ts';
import type { RedisCluster } from './redis-cluster.ts';

export async function assertGetsSpread(
  rc: RedisCluster,
  c: { get(key: string): Promise<unknown> },
  key: string,
  value: string,
  n = 3000,
): Promise<number[]> {
  for (const port of rc.ports) rc.cli(port, 'config', 'resetstat');
  for (let i = 0; i < n; i += 50) {
    const got = await Promise.all(Array.from({ length: 50 }, () => c.get(key)));
    assert.ok(
      got.every((v) => v === value),
      `${got}`,
    );
  }
  const gets = rc.ports.map((port) => callsIn(rc.cli(port, 'info', 'commandstats'), 'get'));
  const total = gets.reduce((a, b) => a + b, 0);
  console.log(`  GETs per master: ${gets.join(' / ')} (busiest ${((100 * Math.max(...gets)) / total).toFixed(0)} %)`);
  assert.ok(total >= n, `GETs ${total}`);
  for (const g of gets) assert.ok(g >= total * 0.2, `GETs per master ${gets}`);
  return gets;
}
