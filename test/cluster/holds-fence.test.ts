/**
 * A cluster member records no registration (Hold) of a key within its ownership fence: after its
 * start, every key; after a change that gave it a key, that key. Within the fence the hub that
 * owned the key before may not have heard of the change yet and acks writes of it directed to its
 * own holders alone, so a holder recorded here would not hear of them and could serve the old
 * value after such an ack (docs/internals/holders.md §8.1). The refusal is NotOwner: the SDK
 * reads through and registers again at its next surge. A standalone hub (no other hub can ever
 * ack its keys) records at once.
 *
 * Two hub processes on one redis-server with an 8 s lease (a 9.5 s fence), so that a hub started
 * on a loaded machine is still within it when the test's first Hold arrives.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HoldResult, MsgType } from '@hotkey/sdk/protocol';
import { fenceMsOf } from '../../hub/src/core/invalidate/ownership-fence.ts';
import { APP, Cluster } from './cluster-harness.ts';
import { RawClient } from '../support/raw-client.ts';
import { startHubInProcess } from '../support/hub-in-process.ts';

const IDS = ['hub-a', 'hub-b'];
const RULES = [{ match: 'item:*', threshold: 200 }];
const LEASE_MS = 8000;
const FENCE_MS = fenceMsOf(LEASE_MS);
let cluster: Cluster | undefined;

test.after(async () => {
  await cluster?.close();
});

let nextId = 0;
/** One Hold of `key` on `client`: what its Held says of it. */
async function holdOnce(client: RawClient, key: string, w: number): Promise<number> {
  const id = ++nextId;
  client.send({ t: MsgType.Hold, id, keys: [key], since: [w] });
  const held = await client.next(MsgType.Held, 3000, (m) => m.id === id);
  return held.r[0]!;
}

test('a cluster member refuses Holds within its start fence and records them after it', async () => {
  const startedAt = Date.now();
  cluster = await Cluster.start(IDS, RULES, ['--lease-ms', String(LEASE_MS)]);
  const key = Cluster.keysOwnedBy(IDS, 'hub-b', 1, 'item:fence:')[0]!;
  const { client, welcome } = await RawClient.join(cluster.hub('hub-b').url, APP);
  try {
    const first = await holdOnce(client, key, welcome.w ?? 0);
    const firstAt = Date.now();
    assert.ok(
      firstAt - startedAt < FENCE_MS,
      `the first Hold came ${firstAt - startedAt} ms after the start, within the fence`,
    );
    assert.is(first, HoldResult.NotOwner, 'within the fence: refused NotOwner');
    let r: number = first;
    const deadline = startedAt + FENCE_MS + 15_000;
    while (r !== HoldResult.Recorded) {
      if (Date.now() > deadline)
        throw new Error(`Hold still answered ${r} ${Date.now() - startedAt} ms after the start`);
      await new Promise((resolve) => setTimeout(resolve, 250));
      r = await holdOnce(client, key, welcome.w ?? 0);
    }
    // the hub's fence runs from its start, which came before this test's first Hold
    assert.ok(Date.now() - firstAt <= FENCE_MS + 1000, 'recorded once the fence passed');
  } finally {
    client.close();
  }
});

test('a standalone hub records a Hold at once', async () => {
  const hub = await startHubInProcess({ tunables: { leaseMs: LEASE_MS } });
  try {
    const { client, welcome } = await RawClient.join(hub.url, APP);
    try {
      assert.is(await holdOnce(client, 'item:fence:alone', welcome.w ?? 0), HoldResult.Recorded);
    } finally {
      client.close();
    }
  } finally {
    await hub.close();
  }
});

test.run();
