/**
 * Fan-out threads end to end (hub/src/server/fanout-threads.ts): a hub that hands every broadcast
 * to its helper threads (once they are up: the first one starts them) still gets every promotion,
 * invalidation and demotion to every SDK, in order, over plain ws://.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hubInProcess } from '../support/e2e.ts';
import { promotions } from '../support/promoted.ts';
import { drive } from '../support/traffic.ts';
import { waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: { apps: { shop: { rules: [{ match: 'item:*', threshold: 50, hotMs: 300, demoteWindows: 1 }] } } },
  tunables: { fanoutThreadsMinSockets: 2 },
});

test('promotion, invalidation and demotion reach every SDK when helper threads write the fan-out', async () => {
  const group = await e2e.sdks(8);
  const promoted = promotions(group, 'item:threads');
  const traffic = drive(group, 'item:threads', 400, 'get');
  try {
    await promoted.all(5000);
  } finally {
    traffic.stop();
  }
  const heard = group.map(() => 0);
  group.forEach((hk, i) => hk.on('invalidate', (key) => key === 'item:threads' && heard[i]!++));
  const result = await group[0]!.invalidate('item:threads');
  assert.equal(result.fenced, [], 'every instance confirmed the drop: none had to be fenced');
  assert.equal(
    heard,
    group.map(() => 1),
  );
  // the first big fan-out (the promotion) started the helpers; the invalidation went through them
  assert.ok(e2e.hub.fanoutStats.byHelpers > 0, 'helper threads wrote part of the fan-out');
  await waitFor(
    'demoted at every SDK once the traffic stopped',
    () => group.every((hk) => !hk.isHot('item:threads')),
    8000,
  );
});

test.run();
