/**
 * Baseline mode from the hub's first second, over a real hub with real SDK clients: six instances
 * join one after another while a key is read steadily at 400/s and a quiet one at 15/s (both from
 * the first instance's start); the busy key is never promoted (busy since the start is not a
 * jump), and the quiet one is promoted when it jumps 20×. With surge-local serving off and on.
 * A promotion is the hub's: the SDKs' 'promote' event (`isHot` is also true for a local surge).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HotKeyClient } from '@hotkey/sdk';
import { startHubInProcess } from '../support/e2e.ts';
import { drive, type Driver } from '../support/traffic.ts';
import { delay, within } from '../support/wait.ts';

const RULE = { match: 'feed:*', mode: 'baseline', factor: 5, minQps: 60 };
const INSTANCES = 6;
/** a new instance joins this often: the last one about 1.5 s after the first */
const JOIN_EVERY_MS = 300;
/** the quiet key jumps this long after the start: its baseline has formed (three whole windows) */
const JUMP_AT_MS = 8000;

for (const surgeLocal of [false, true]) {
  test(`surgeLocal ${surgeLocal ? 'on' : 'off'}: busy since the hub's start is not a jump; a quiet key's 20× jump is`, async () => {
    const hub = await startHubInProcess({ config: { apps: { shop: { rules: [RULE] } } } });
    const clients: HotKeyClient[] = [];
    const drivers: Driver[] = [];
    const promoted = new Map<string, number>();
    const started = performance.now();
    let quietJumped: () => void = () => {};
    const quietPromoted = new Promise<void>((resolve) => (quietJumped = resolve));
    const join = (i: number) => {
      const hk = new HotKeyClient({ app: 'shop', hubs: [hub.url], instanceId: `i-${i}`, surgeLocal });
      hk.on('error', () => {});
      hk.on('promote', (key) => {
        if (!promoted.has(key)) promoted.set(key, performance.now() - started);
        if (key === 'feed:quiet') quietJumped();
      });
      clients.push(hk); // the drivers spread their reads over the instances started so far
    };
    try {
      join(0);
      // steady: a stall of this process shows as a gap, not as a burst
      drivers.push(drive(clients, 'feed:busy', 400, 'track', { steady: true }));
      const quiet = drive(clients, 'feed:quiet', 15, 'track', { steady: true });
      drivers.push(quiet);
      for (let i = 1; i < INSTANCES; i++) {
        await delay(JOIN_EVERY_MS);
        join(i);
      }
      await delay(JUMP_AT_MS - (performance.now() - started));
      assert.equal([...promoted.keys()], [], 'nothing promoted at steady rates');
      quiet.stop();
      const jumpedAt = performance.now() - started;
      drivers.push(drive(clients, 'feed:quiet', 300, 'track', { steady: true }));
      await within('feed:quiet promoted after its jump', quietPromoted, 3000);
      assert.ok(promoted.get('feed:quiet')! >= jumpedAt, 'promoted for its jump, not before');
      await delay(1000); // the busy key keeps its rate past the jump, 10 s after the start in all
      assert.equal([...promoted.keys()], ['feed:quiet'], 'the busy key was never promoted');
    } finally {
      for (const d of drivers) d.stop();
      await within('the clients to close', Promise.all(clients.map((hk) => hk.close())), 10_000);
      await within('the hub to close', hub.close(), 10_000);
    }
  });
}

test.run();
