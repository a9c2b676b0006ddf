/**
 * A real hub process for app `shop` whose keys a test makes hot by hand, through the admin API
 * (`POST /api/apps/shop/promote`), with a HotKeyClient connected to it: the fixture of tests that
 * need a key hot now, not after traffic crossed a threshold.
 */
import { HotKeyClient } from '@hotkey/sdk';
import { HubProcess, writeConfig } from './hub-process.ts';
import { promoteViaApi } from './promote.ts';

/** Rules under which nothing turns hot by itself, and promoted keys stay hot and cached for minutes. */
export const MANUAL_RULE = { match: '*', threshold: 1_000_000, windowMs: 1000, hotMs: 120_000, cacheTtlMs: 120_000 };

export interface PromotingHub {
  hub: HubProcess;
  hk: HotKeyClient;
  /** promotes `key` at the hub and waits until `on` (default: the fixture's client) holds it hot */
  promote(key: string, on?: HotKeyClient): Promise<void>;
  close(): Promise<void>;
}

export async function promotingHub(
  rules: object[] = [MANUAL_RULE],
  prefix = 'hotkey-promoting-',
): Promise<PromotingHub> {
  const token = `admin-${prefix}`;
  const configPath = writeConfig({ apps: { shop: { rules } }, adminToken: token }, prefix);
  const hub = await HubProcess.start({ args: ['--config', configPath] });
  const hk = new HotKeyClient({ app: 'shop', hubs: [hub.url], flushIntervalMs: 20 });
  await hk.ready({ signal: AbortSignal.timeout(5000) });
  return {
    hub,
    hk,
    promote: (key, on = hk) => promoteViaApi(hub.httpUrl, token, key, on),
    async close() {
      await hk.close();
      await hub.stop();
    },
  };
}
