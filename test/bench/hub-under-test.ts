/**
 * The benchmarks' hub under measurement: a thin bench layer over the tests' one in-process start
 * (startHubInProcess) that only builds the config. Open mode is avoided: the app `bench` is
 * configured with one catch-all rule.
 */
import { RULE_DEFAULTS } from '@hotkey/sdk/rules';
import { startHubInProcess } from '../support/hub-in-process.ts';

export interface HubUnderTestOptions {
  /** accesses per window that promote a key @default 1000 */
  threshold?: number;
  /** fields of the app `bench`'s one rule over RULE_DEFAULTS (e.g. a long `hotMs`) @default none */
  rule?: Record<string, unknown>;
  tunables?: Record<string, number>;
  /** more apps, each with one catch-all rule: these fields over RULE_DEFAULTS and the threshold */
  apps?: Record<string, Record<string, unknown>>;
}

export async function startHubUnderTest(
  opts: HubUnderTestOptions = {},
): Promise<{ url: string; close(): Promise<void> }> {
  const hub = await startHubInProcess({
    host: '127.0.0.1',
    config: {
      apps: {
        bench: {
          rules: [
            {
              ...RULE_DEFAULTS,
              match: '*',
              threshold: opts.threshold ?? 1000,
              ...opts.rule,
            },
          ],
        },
        ...Object.fromEntries(
          Object.entries(opts.apps ?? {}).map(([app, rule]) => [
            app,
            { rules: [{ ...RULE_DEFAULTS, match: '*', threshold: opts.threshold ?? 1000, ...rule }] },
          ]),
        ),
      },
    },
    tunables: opts.tunables,
  });
  return hub;
}
