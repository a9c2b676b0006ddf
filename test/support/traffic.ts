/**
 * Paced traffic for end-to-end tests (waits live in wait.ts). `drive` spreads `perSecond` accesses of a
 * key evenly over the given SDK clients in 20 ms ticks, so a test can put a key at an exact
 * cluster-wide rate (over, at half, or thinly spread under a threshold).
 */
import type { HotKeyClient } from '@hotkey/sdk';

const TICK_MS = 20;

export interface Driver {
  /** accesses made so far */
  readonly sent: number;
  stop(): void;
}

/**
 * Starts paced reads of `key` through `hk.get` (or `track`) on every client, until stopped. A late
 * tick pays back what the delay owed, so the long-run rate is exact; with `steady`, a tick never
 * sends more than two ticks' worth, so that a stall of this process (a loaded box) shows as a
 * gap in the key's traffic rather than as a surge (for tests that a surge would fail: a steady
 * key under a baseline rule).
 */
export function drive(
  clients: readonly HotKeyClient[],
  key: string,
  perSecond: number,
  mode: 'get' | 'track' = 'track',
  { steady = false }: { steady?: boolean } = {},
): Driver {
  let sent = 0;
  let owed = 0;
  const started = performance.now();
  const cap = Math.max(1, Math.ceil((2 * TICK_MS * perSecond) / 1000));
  let skipped = 0;
  const loader = () => Promise.resolve(`loaded ${key}`);
  const timer = setInterval(() => {
    // pay back whatever the timer drifted, so the long-run rate is exact (less any gap)
    let due = Math.floor(((performance.now() - started) * perSecond) / 1000) - sent - skipped;
    if (steady && due > cap) {
      skipped += due - cap; // the gap: never sent, and no longer owed
      due = cap;
    }
    owed = Math.max(0, due);
    for (let i = 0; i < owed; i++) {
      const hk = clients[(sent + i) % clients.length]!;
      if (mode === 'get') void hk.get(key, loader).catch(() => {});
      else hk.track(key);
    }
    sent += owed;
  }, TICK_MS);
  return {
    get sent() {
      return sent;
    },
    stop: () => clearInterval(timer),
  };
}
