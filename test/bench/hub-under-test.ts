/**
 * The one place the benchmarks start the real hub, so that a change in `startHub`'s options is
 * fixed here once. Open mode is avoided: the app `bench` is configured with one catch-all rule.
 */
import { RULE_DEFAULTS } from '@hotkey/sdk/rules';
import { startHub } from '@hotkey/hub';

export interface HubUnderTestOptions {
  /** accesses per window that promote a key @default 1000 */
  threshold?: number;
  tunables?: Record<string, number>;
}

export async function startHubUnderTest(
  opts: HubUnderTestOptions = {},
): Promise<{ url: string; close(): Promise<void> }> {
  const hub = await startHub({
    port: 0,
    host: '127.0.0.1',
    config: {
      apps: {
        bench: {
          rules: [
            {
              ...RULE_DEFAULTS,
              match: '*',
              threshold: opts.threshold ?? 1000,
            },
          ],
        },
      },
    },
    tunables: opts.tunables,
    log: () => undefined,
  });
  return hub;
}
