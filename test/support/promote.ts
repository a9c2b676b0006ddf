/**
 * Promoting a key by hand and waiting until the SDK instances that must see it have it hot: over
 * the admin API (`POST /api/apps/<app>/promote`, for a hub process), or through an in-process
 * hub's core. Every wait has a deadline.
 */
import * as assert from 'uvu/assert';
import type { HotKeyClient } from '@hotkey/sdk';
import type { Hub } from '@hotkey/hub';
import { request } from './http.ts';
import { waitFor } from './wait.ts';

/** Promotes `key` of app `shop` through the admin API of the hub at `httpUrl`; resolves once `hk` has it hot. */
export async function promoteViaApi(httpUrl: string, token: string, key: string, hk: HotKeyClient): Promise<void> {
  const res = await request(`${httpUrl}/api/apps/shop/promote`, {
    method: 'POST',
    body: JSON.stringify({ key }),
    token,
  });
  assert.is(res.status, 200, JSON.stringify(res.body));
  await waitFor(`${key} hot`, () => hk.isHot(key));
}

/** Promotes `key` of `app` at an in-process hub; resolves once every client of `on` has it hot. */
export async function promoteInProcess(
  hub: Hub,
  app: string,
  key: string,
  on: readonly HotKeyClient[],
  timeoutMs = 5000,
): Promise<void> {
  assert.ok(hub.core.promote(app, key), `promote ${key}`);
  await waitFor(`${key} hot on every instance`, () => on.every((hk) => hk.isHot(key)), timeoutMs);
}
