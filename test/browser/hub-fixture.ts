/**
 * The fixture of the dashboard tests that drive real SDK traffic: a hub process on a config file,
 * a Chromium, and `sdks` HotKeyClients of app `shop` (hosts web-1, web-2 …), each start with a
 * deadline; and their teardown, traffic driver included.
 */
import { HotKeyClient } from '@hotkey/sdk';
import { HubProcess } from '../support/hub-process.ts';
import type { Driver } from '../support/traffic.ts';
import { within } from '../support/wait.ts';
import { Chromium } from './chromium.ts';

export interface HubFixture {
  hub: HubProcess;
  browser: Chromium;
  clients: HotKeyClient[];
}

export async function startHubFixture(configPath: string, sdks: number): Promise<HubFixture> {
  const hub = await within('hub start', HubProcess.start({ args: ['--config', configPath] }), 40_000);
  const browser = await within('chromium launch', Chromium.launch(), 40_000);
  const clients = Array.from(
    { length: sdks },
    (_, i) => new HotKeyClient({ app: 'shop', hubs: [hub.url], host: `web-${i + 1}`, reconnectMaxMs: 300 }),
  );
  await Promise.all(clients.map((hk) => hk.ready({ signal: AbortSignal.timeout(5000) })));
  return { hub, browser, clients };
}

/** Stops the driver and closes what `startHubFixture` opened (parts it never got to are skipped). */
export async function stopHubFixture(f: Partial<HubFixture>, driver: Driver | undefined): Promise<void> {
  driver?.stop();
  const closing = [...(f.clients ?? []).map((hk) => hk.close()), f.browser?.close(), f.hub?.stop()];
  await within('teardown', Promise.all(closing), 20_000);
}
