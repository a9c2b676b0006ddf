/**
 * The body that benchmark 4b runs under callgrind: `N` operations of one kind, nothing else after
 * start-up, so that the difference between two runs with different `N` is the cost of N₂ − N₁
 * operations whatever start-up, JIT and the scripted hub cost.
 *
 *   node --import tsx test/bench/instructions.worker.ts <get-hit|track-cold|map-get> <N>
 */
import { HotKeyClient } from '@hotkey/sdk';
import { MsgType } from '@hotkey/sdk/protocol';
import { ProtocolPeer } from '../support/protocol-peer.ts';
import { waitFor } from '../support/wait.ts';
import { consume } from './harness.ts';

const [op, count] = process.argv.slice(2);
const n = Number(count);
if (!['get-hit', 'track-cold', 'map-get'].includes(op ?? '') || !Number.isInteger(n) || n < 1) {
  console.error('usage: instructions.worker.ts <get-hit|track-cold|map-get> <N>');
  process.exit(2);
}

const HOT = 'item:hot';
const value = { price: 42 };
// callgrind runs code ~50× slower: every deadline here is generous
const peer = await new ProtocolPeer({ id: 'hub-a' }).listen();
const socket = peer.nextSocket(120_000);
const client = new HotKeyClient({ app: 'bench', hubs: peer.url, instanceId: 'instructions' });
try {
  const sock = await socket;
  await client.ready({ signal: AbortSignal.timeout(120_000) });
  sock.send({
    t: MsgType.Promote,
    seq: 1,
    key: HOT,
    qps: 1,
    hotMs: 3_600_000,
    cacheTtlMs: 3_600_000,
    cache: true,
    at: Date.now(),
  });
  await waitFor('the key is hot', () => client.isHot(HOT), 120_000);
  // a hit needs a current lease from the hub: under callgrind start-up can outlast one, so wait
  // for a get() that hits before measuring (the loop then runs in one task, on one clock reading)
  await waitFor(
    'a get() answered from the cache',
    async () => {
      const hits = client.stats().hits;
      await client.get(HOT, () => value);
      return client.stats().hits > hits;
    },
    120_000,
  );
  if (op === 'get-hit') {
    const hitsBefore = client.stats().hits;
    let last: Promise<unknown> | undefined;
    for (let i = 0; i < n; i++) last = client.get(HOT, () => value);
    consume(await last);
    if (client.stats().hits - hitsBefore < n) throw new Error('get() did not hit the cache');
  } else if (op === 'track-cold') {
    for (let i = 0; i < n; i++) client.track('item:cold');
  } else {
    const map = new Map<string, unknown>([[HOT, value]]);
    for (let i = 0; i < 10_000; i++) map.set(`filler:${i}`, i);
    let x = 0;
    for (let i = 0; i < n; i++) if (map.get(HOT) !== undefined) x++;
    consume(x);
  }
} finally {
  await client.close();
  await peer.close();
}
