/**
 * What the circuit-breaker tests of both adapters share: the hub rules of their keys, how a
 * command settled within a deadline (one the breaker must fail fast must not hang the test), and
 * the breaker's metrics series.
 */
import * as assert from 'uvu/assert';
import type { HotKeyClient, HotKeyError } from '@hotkey/sdk';
import type { BreakerStats } from '@hotkey/sdk/ioredis';
import { metricsText } from '@hotkey/sdk/metrics';
import { waitFor, within } from './wait.ts';

/**
 * `hot:*` keys cached for the whole test; `stale:*` keys whose value expires during the outage
 * (cacheTtlMs 300), so that their reload is refused by the breaker and stale-if-error serves
 * them. `threshold`: accesses that promote them (a large one: promoted by hand only).
 */
export function breakerRules(threshold: number) {
  return [
    { match: 'hot:*', threshold, hotMs: 600_000, cacheTtlMs: 600_000 },
    { match: 'stale:*', threshold, hotMs: 600_000, cacheTtlMs: 300, staleIfErrorMs: 20_000 },
  ];
}

/** the deadline of commands sent before a freeze, which answer after SIGCONT */
export const STUCK_MS = 30_000;

/** How `p` settled, within `ms`: its value, or its error's code (a timeout's message). */
export function outcome(p: Promise<unknown>, ms = 3000): Promise<{ value?: unknown; code?: string }> {
  return within('a reply', p, ms).then(
    (value) => ({ value }),
    (err: HotKeyError) => ({ code: err.code ?? err.message }),
  );
}

/** The value of one series of `node` in hk's metrics text (NaN when absent). */
export function breakerSeries(hk: HotKeyClient, name: string, node: string): number {
  const line = new RegExp(`^hotkey_sdk_${name}\\{app="shop",node="${node}"\\} (\\S+)$`, 'm').exec(metricsText(hk));
  return Number(line?.[1]);
}

/** The breaker of `stats.node` is open, once, and the metrics say what its stats say (`adapter`: the series' prefix). */
export function assertOpenSeries(hk: HotKeyClient, adapter: string, stats: BreakerStats): void {
  assert.is(breakerSeries(hk, `${adapter}_breaker_open`, stats.node), 1, metricsText(hk));
  assert.is(breakerSeries(hk, `${adapter}_breaker_rejected_total`, stats.node), stats.rejected);
  assert.is(breakerSeries(hk, `${adapter}_breaker_opened_total`, stats.node), 1);
}

/**
 * SIGCONT (`resume`): the reads sent before the freeze (`stuck`, replies of keys never set)
 * answer null now, and the half-open probe closes the breaker (`events`: its states in order).
 */
export async function thaw(
  resume: () => void,
  stuck: ReadonlyArray<Promise<{ value?: unknown; code?: string }>>,
  events: readonly string[],
): Promise<void> {
  resume();
  for (const r of await Promise.all(stuck)) assert.equal(r, { value: null });
  await waitFor('breaker closed by the probe', () => events.at(-1) === 'closed', 5000);
  assert.equal(events, ['open', 'half-open', 'closed']);
}
