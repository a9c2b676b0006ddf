/**
 * The rule field `push` on the wire: a hub sends it in Welcome and Config under its former name
 * `share`, which SDKs of the previous minor version read (they refuse a rule with a field they do
 * not know), and this SDK reads it back as `push`. A config file may use either name.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeFrame, MsgType } from '@hotkey/sdk/protocol';
import type { Hub } from '@hotkey/hub';
import { startHubInProcess } from '../support/e2e.ts';
import { RawClient } from '../support/raw-client.ts';

const config = {
  apps: {
    shop: {
      rules: [
        { match: 'p:*', threshold: 5, push: true },
        { match: 's:*', threshold: 5, share: true },
        { match: 'x:*', threshold: 5 },
      ],
    },
  },
};
let hub: Hub;
const clients: RawClient[] = [];

test.before(async () => {
  hub = await startHubInProcess({ config });
});
test.after(async () => {
  for (const c of clients) c.close();
  await hub?.close();
});

test('Welcome carries push as share; the SDK decodes it as push, from either spelling in the config', async () => {
  const { client, welcome } = await RawClient.join(hub.url, 'shop');
  clients.push(client);
  assert.equal(
    welcome.rules.map((r) => [r.match, r.push, r.share]),
    [
      ['p:*', true, undefined],
      ['s:*', true, undefined],
      ['x:*', undefined, undefined],
    ],
  );
  const raw = client.frames.map((f) => decodeFrame(f)).find((m) => m.t === MsgType.Welcome);
  const rules = raw?.rules as Record<string, unknown>[];
  assert.equal(
    rules.map((r) => [r.match, r.share, 'push' in r]),
    [
      ['p:*', true, false],
      ['s:*', true, false],
      ['x:*', undefined, false],
    ],
  );
});

test('Config, after the rules change, carries push as share too', async () => {
  const { client } = await RawClient.join(hub.url, 'shop');
  clients.push(client);
  await hub.reload({ config: { apps: { shop: { rules: [{ match: 'q:*', threshold: 5, push: true }] } } } });
  // the first Config may be the instance count's (this client joined beside the first test's)
  const config = await client.next(MsgType.Config, 3000, (c) => c.rules.some((r) => r.match === 'q:*'));
  assert.equal(
    config.rules.map((r) => [r.match, r.push]),
    [['q:*', true]],
  );
  const raw = client.frames
    .map((f) => decodeFrame(f))
    .find((m) => m.t === MsgType.Config && (m.rules as { match: string }[]).some((r) => r.match === 'q:*'));
  const { push, ...rest } = config.rules[0]!;
  assert.equal(raw?.rules, [{ ...rest, share: push }], 'the rule as parsed, push spelled share');
});

test.run();
