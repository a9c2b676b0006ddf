/**
 * Helpers of the tracked-prefix tests (`tracking: { prefixes }`, sdk/src/redis/tracking/tracking-session.ts):
 * waiting until an instance holds its first lease (a cold read is kept only under a current one)
 * and until a wrapped client's broadcast session is live (a probe read under a prefix is kept),
 * and reading a key the way a surge does.
 */
import type { HotKeyClient } from '@hotkey/sdk';
import { waitFor } from './wait.ts';

export type Reader = { get(key: string): Promise<unknown> };

/**
 * Resolves once `hk` holds a current lease of the owner hub of a probe key (its first Grant applied).
 * A fresh `probe` asks again after an idle spell: an instance that read nothing lets its lease lapse,
 * and a probe made hot under the earlier lease would still answer at once.
 */
export async function leaseApplied(hk: HotKeyClient, timeoutMs = 5000, probe = 'lease-probe'): Promise<void> {
  await waitFor(
    'the first lease applied',
    async () => {
      await Promise.all(Array.from({ length: 5 }, () => hk.get(probe, () => 'p')));
      return hk.isHot(probe);
    },
    timeoutMs,
  );
}

/** Reads `probe` (a key under a tracked prefix) through `c` until `hk` keeps the read: the broadcast session of its node is live. */
export async function keptRead(
  hk: HotKeyClient,
  c: Reader,
  probe: string,
  what: string,
  timeoutMs = 5000,
): Promise<void> {
  await waitFor(
    `${what}: broadcast tracking live`,
    async () => {
      const kept = hk.stats().recentReads;
      await c.get(probe);
      return hk.stats().recentReads > kept;
    },
    timeoutMs,
  );
}

/** `n` reads of `key` in one job. */
export function burst(c: Reader, key: string, n: number): Promise<unknown[]> {
  return Promise.all(Array.from({ length: n }, () => c.get(key)));
}
