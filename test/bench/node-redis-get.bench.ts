/**
 * The node-redis adapter's CPU cost per GET, beside a plain node-redis client (the sibling of
 * ioredis-get.bench.ts): a hot GET answered locally (beside `hk.get`), and cold GETs that go to a
 * real redis-server (CPU ns/op, user + system), each of a key never read before (a key read again
 * and again would surge and be served locally): one at a time (awaited), 100 and 1,000 in flight
 * (the 1M-key sweep of node-redis.bench.ts reads 1,000 at a time). Median of 7 rounds, the two
 * clients alternated in each. A protocol peer stands in for the
 * hub and promotes the hot key.
 *
 *   pnpm bench --only node-redis-get
 */
import { createClient } from 'redis';
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/node-redis';
import { MsgType } from '@hotkey/sdk/protocol';
import { ProtocolPeer } from '../support/protocol-peer.ts';
import { RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait.ts';
import { benchMain, type BenchRow } from './harness.ts';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/** CPU ns per call of `run`, `lanes` calls in flight all along (each lane awaits its call before the next). */
async function cpuPerOp(ops: number, lanes: number, run: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const cpu0 = process.cpuUsage();
  const lane = async () => {
    while (next < ops) await run(next++);
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  const cpu = process.cpuUsage(cpu0);
  return ((cpu.user + cpu.system) * 1000) / ops;
}

benchMain(async ({ quick }) => {
  const rounds = quick ? 2 : 7;
  const server = await RedisServer.start();
  const peer = await new ProtocolPeer({ id: 'hub-bench' }).listen();
  const socket = peer.nextSocket();
  const hk = new HotKeyClient({ app: 'bench', hubs: peer.url, flushIntervalMs: 100 });
  const plain = createClient({ url: server.url });
  const wrapped = withHotKeys(createClient({ url: server.url }), hk);
  try {
    const sock = await socket;
    await hk.ready({ signal: AbortSignal.timeout(5000) });
    await plain.connect();
    await wrapped.connect();
    await plain.set('item:hot', 'v'.repeat(64));
    sock.send({
      t: MsgType.Promote,
      seq: 1,
      key: 'item:hot',
      qps: 1e5,
      hotMs: 600_000,
      cacheTtlMs: 600_000,
      cache: true,
      at: 0,
    });
    await waitFor('item:hot hot', () => hk.isHot('item:hot'), 5000);
    await wrapped.get('item:hot');
    let sweep = 0; // keys never read before, as the sweep's
    const distinct = () => `sweep:${sweep++}`;
    const rows: Record<string, number[]> = {
      hkHit: [],
      wrappedHit: [],
      plainAwaited: [],
      wrappedAwaited: [],
      plainCold: [],
      wrappedCold: [],
      plainSweep: [],
      wrappedSweep: [],
    };
    const sweepOps = quick ? 20_000 : 100_000;
    for (let round = 0; round < rounds; round++) {
      rows.hkHit!.push(await cpuPerOp(200_000, 1000, () => hk.get('item:hot', () => 'x')));
      rows.wrappedHit!.push(await cpuPerOp(200_000, 1000, () => wrapped.get('item:hot')));
      rows.plainAwaited!.push(await cpuPerOp(5_000, 1, () => plain.get(distinct())));
      rows.wrappedAwaited!.push(await cpuPerOp(5_000, 1, () => wrapped.get(distinct())));
      rows.plainCold!.push(await cpuPerOp(20_000, 100, () => plain.get(distinct())));
      rows.wrappedCold!.push(await cpuPerOp(20_000, 100, () => wrapped.get(distinct())));
      rows.plainSweep!.push(await cpuPerOp(sweepOps, 1000, () => plain.get(distinct())));
      rows.wrappedSweep!.push(await cpuPerOp(sweepOps, 1000, () => wrapped.get(distinct())));
    }
    const out = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, Math.round(median(v))]));
    const note = `median of ${rounds} rounds`;
    const row = (metric: string, ours: number, baseline: number): BenchRow => ({
      bench: 'node-redis GET',
      metric,
      ours,
      baseline,
      unit: 'ns/op',
      better: 'lower',
      note,
    });
    return [
      row('hot GET hit through the adapter (baseline: hk.get hit)', out.wrappedHit!, out.hkHit!),
      row('cold GET awaited one at a time, CPU (baseline: plain node-redis)', out.wrappedAwaited!, out.plainAwaited!),
      row('cold GETs, 100 in flight, CPU (baseline: plain node-redis)', out.wrappedCold!, out.plainCold!),
      row('cold GETs, 1,000 in flight, CPU (baseline: plain node-redis)', out.wrappedSweep!, out.plainSweep!),
    ];
  } finally {
    await plain.close().catch(() => undefined);
    await wrapped.close().catch(() => undefined);
    await hk.close();
    await peer.close();
    await server.stop();
  }
});
