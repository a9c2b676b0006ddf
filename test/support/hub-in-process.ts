/**
 * The one in-process hub start: `startHub` on port 0 with a silent log unless given. Tests reach it
 * through `e2e.ts` (which re-exports it beside `hubInProcess`); the benchmarks' server worker
 * imports this file alone, so that the hub under measurement loads no SDK client or test peer.
 *
 *   const h = await startHubInProcess({ tunables: { helloTimeoutMs: 300 } });
 *   try { … h.url, h.httpUrl, h.core … } finally { await h.close(); }
 */
import { startHub, type Hub, type HubOptions } from '@hotkey/hub';
import { silentLogger } from '../../hub/src/core/logger.ts';

export function startHubInProcess(options: HubOptions = {}): Promise<Hub> {
  return startHub({ port: 0, logger: silentLogger, ...options });
}
