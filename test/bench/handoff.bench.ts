/**
 * Benchmark — window handoff on a membership change (hub/src/core/membership/handoff.ts).
 *
 * 1. Surge → promotion latency for a key whose owner leaves mid-window: three `hotkey-hub --redis`
 *    processes on a real redis-server, one SDK connected to all three; the key surges at 2 ×
 *    threshold, one start fence after the cluster is up (a running cluster's change: a fresh hub
 *    listed alone promotes nothing within its start fence, PROTOCOL.md H26), and its owner gets
 *    SIGTERM 300 ms in. The figure is the time from the surge's start
 *    until the SDK hears the key's promotion, with handoff and with `--handoff-max-keys 0`,
 *    rounds alternating (a fresh cluster each), against the same surge without a change.
 * 2. What a handoff costs per 10,000 tracked keys, in this process on the real aggregator: the
 *    sender's CPU (export and encode), the bytes of its chunks, the receiver's CPU (decode, check
 *    and merge).
 */
import { performance } from 'node:perf_hooks';
import { HotKeyClient } from '@hotkey/sdk';
import { Ownership } from '@hotkey/sdk/ownership';
import type { Member } from '@hotkey/sdk/protocol';
import { parseRules } from '@hotkey/sdk/rules';
import { Aggregator } from '../../hub/src/core/aggregate/aggregator.ts';
import { emptyHandoffCounters, Handoff } from '../../hub/src/core/membership/handoff.ts';
import { silentLogger } from '../../hub/src/core/logger.ts';
import { APP, Cluster } from '../cluster/cluster-harness.ts';
import { benchMain, percentile, type BenchRow } from './harness.ts';
import { delay, waitFor } from '../support/wait.ts';
import { START_FENCE_MS } from './server-process.ts';

const THRESHOLD = 1000;
const IDS = ['h1', 'h2', 'h3'];
const VICTIM = 'h3';
const LEAVE_AT_MS = 300;

type Mode = 'handoff' | 'no handoff' | 'no change';

async function round(r: number, mode: Mode): Promise<number> {
  const args = mode === 'no handoff' ? ['--handoff-max-keys', '0'] : [];
  const cluster = await Cluster.start(IDS, [{ match: '*', threshold: THRESHOLD }], args);
  const started = performance.now();
  const client = new HotKeyClient({ app: APP, hubs: cluster.hub('h1').url, instanceId: `handoff-${r}` });
  client.on('error', () => undefined);
  let surge: NodeJS.Timeout | undefined;
  try {
    await client.ready({ signal: AbortSignal.timeout(10_000) });
    await waitFor('SDK connected to every hub', () => client.hubs().length === IDS.length, 10_000);
    // a running cluster's change, not a fresh one's: a hub listed alone at its start promotes
    // nothing within its start fence (PROTOCOL.md H26), and the hubs started together here
    await delay(Math.max(0, started + START_FENCE_MS - performance.now()));
    const [key] = Cluster.keysOwnedBy(IDS, VICTIM, 1, `surge:${r}:`);
    let promotedAt = Number.NaN;
    client.on('promote', (k) => {
      if (k === key && Number.isNaN(promotedAt)) promotedAt = performance.now();
    });
    const start = performance.now();
    let done = 0;
    // 2 × threshold per second, caught up by elapsed time (a late timer does not thin the surge)
    surge = setInterval(() => {
      for (const due = Math.floor((2 * THRESHOLD * (performance.now() - start)) / 1000); done < due; done++)
        client.track(key!);
    }, 5);
    if (mode !== 'no change') {
      await delay(LEAVE_AT_MS);
      void cluster.hub(VICTIM).stop('SIGTERM', 8000);
    }
    await waitFor('the key promoted', () => !Number.isNaN(promotedAt), 20_000);
    return promotedAt - start;
  } finally {
    clearInterval(surge);
    await client.close();
    await cluster.close();
  }
}

/** Sender and receiver CPU (ms) and bytes for one handoff of `keys` tracked keys. */
function handoffCost(keys: number): { sendMs: number; receiveMs: number; bytes: number } {
  const rules = parseRules([{ match: '*', threshold: 1_000_000, windowMs: 1000 }]);
  const members = (...ids: string[]): Member[] => ids.map((id) => ({ id, url: `ws://${id}` }));
  const now = 1_000_000;
  const make = (id: string, ids: string[], sent: Uint8Array[]) => {
    const o = new Ownership(ids);
    const agg = new Aggregator({
      rules,
      maxKeys: keys * 2,
      accept: (k) => o.owner(k) === id,
      listener: { promote() {}, demote() {} },
    });
    const handoff = new Handoff(
      {
        selfId: id,
        maxKeys: keys,
        send: (_to, bytes) => sent.push(bytes),
        apps: () => [{ name: APP, aggregator: agg }],
        open: () => agg,
        setAccept: (accept) => agg.setAccept(accept, now),
        drainMs: 0,
        followMs: 0,
        leaveMs: 0,
        idle: () => true,
        counters: emptyHandoffCounters(),
        logger: silentLogger,
        wallNow: () => now,
        monoNow: () => now,
      },
      1,
      members(...ids),
    );
    return { agg, handoff };
  };
  const sent: Uint8Array[] = [];
  const sender = make('b', ['a', 'b'], sent);
  const receiver = make('a', ['a', 'b'], []);
  const names: string[] = [];
  const pair = new Ownership(['a', 'b']);
  for (let i = 0; names.length < keys; i++) if (pair.owner(`item:${i}`) === 'b') names.push(`item:${i}`);
  // five slices of the window hold counts
  for (let s = 0; s < 5; s++)
    sender.agg.ingest(
      names,
      names.map((_, i) => 1 + (i % 97)),
      0,
      now - s * 100,
    );
  receiver.handoff.changed(2, members('a'), undefined, undefined);
  receiver.handoff.flush();
  const both = new Ownership(['a', 'b']);
  const t0 = performance.now();
  sender.handoff.changed(
    2,
    members('a'),
    (k) => both.owner(k) === 'b',
    () => false,
  );
  sender.handoff.flush();
  const t1 = performance.now();
  for (const bytes of sent) receiver.handoff.receive(bytes);
  const t2 = performance.now();
  if (receiver.agg.stats.keys !== keys) throw new Error(`merged ${receiver.agg.stats.keys} of ${keys} keys`);
  return { sendMs: t1 - t0, receiveMs: t2 - t1, bytes: sent.reduce((n, b) => n + b.byteLength, 0) };
}

benchMain(async ({ quick }) => {
  const rounds = quick ? 1 : 3;
  const times: Record<Mode, number[]> = { handoff: [], 'no handoff': [], 'no change': [] };
  for (let r = 0; r < rounds; r++)
    for (const mode of ['handoff', 'no handoff', 'no change'] as Mode[]) times[mode].push(await round(r, mode));
  const costs = Array.from({ length: quick ? 3 : 9 }, () => handoffCost(10_000));
  const med = (xs: number[]) => percentile(xs, 50);
  const note = `3 hubs + redis-server, 1 SDK, surge 2× threshold, owner SIGTERM ${LEAVE_AT_MS} ms in; ${rounds} rounds each, alternating`;
  const rows: BenchRow[] = [
    {
      bench: 'handoff',
      metric: 'surge → promotion, owner leaves mid-window, p50 (baseline: without handoff)',
      ours: med(times.handoff),
      baseline: med(times['no handoff']),
      unit: 'ms',
      better: 'lower',
      note,
    },
    {
      bench: 'handoff',
      metric: 'same surge without a membership change, p50',
      ours: med(times['no change']),
      unit: 'ms',
      better: 'lower',
      note: `rounds: handoff ${times.handoff.map(Math.round)}, none ${times['no handoff'].map(Math.round)}, no change ${times['no change'].map(Math.round)}`,
    },
    {
      bench: 'handoff',
      metric: 'sender CPU per 10,000 tracked keys handed over (export + encode), p50',
      ours: med(costs.map((c) => c.sendMs)),
      unit: 'ms',
      better: 'lower',
    },
    {
      bench: 'handoff',
      metric: 'receiver CPU per 10,000 keys (decode, check, merge), p50',
      ours: med(costs.map((c) => c.receiveMs)),
      unit: 'ms',
      better: 'lower',
    },
    {
      bench: 'handoff',
      metric: 'bytes per 10,000 keys handed over (5 of 10 slices filled)',
      ours: med(costs.map((c) => c.bytes)),
      unit: 'B',
      better: 'lower',
    },
  ];
  return rows;
});
