/**
 * The consistency checker for directed invalidations (protocol 3, docs/internals/holders.md): a
 * real hub process and redis-server, 300 idle simulated instances of the app (sim-sdk.worker.ts:
 * real sockets, speaking protocol 3, holding nothing), a holder — a HotKeyClient whose link to the
 * hub runs through a TCP proxy and that reads a key the hub never promotes in bursts, so that it
 * surges locally, registers the key with its owner hub and serves it from memory — and a writer
 * that writes the key in Redis and then invalidates it, each value a growing version. Every write
 * of a key the holder registered is a Drop to the holder alone; the idle fleet hears nothing.
 *
 * Phases: the holder connected; the holder's link frozen while a write of its key is in flight
 * (the ack must wait for the holder's lease and name it fenced); the link back. The check: no
 * read returns a version older than a write acknowledged before the read began.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { HotKeyClient } from '@hotkey/sdk';
import { fenceMsOf } from '../../hub/src/core/invalidate/ownership-fence.ts';
import { DEFAULT_TUNABLES } from '../../hub/src/core/tunables.ts';
import { SimFleet } from '../bench/sim-fleet.ts';
import type { Worker } from '../bench/harness.ts';
import { hostNow } from '../support/host-clock.ts';
import { HubProcess, writeConfig } from '../support/hub-process.ts';
import { RedisServer } from '../support/redis-server.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';
import { delay, waitFor, within } from '../support/wait.ts';

const now = hostNow;
const APP = 'bench';
const KEY = 'ckh:item';
const IDLE = Number(process.env.CK_IDLE ?? 300);
const PHASE_MS = Number(process.env.CK_PHASE_MS ?? 3000);
/** the hub acks nothing before one fence after its start (PROTOCOL.md, H16) */
const START_FENCE_MS = fenceMsOf(DEFAULT_TUNABLES.leaseMs);
/** the rule never promotes at the hub: the holder serves the key from a local surge only */
const config = { apps: { [APP]: { rules: [{ match: 'ckh:*', threshold: 1_000_000, cacheTtlMs: 20_000 }] } } };

interface Read {
  at: number;
  version: number;
  phase: string;
}
interface Ack {
  at: number;
  version: number;
  fenced: string[];
  ms: number;
  phase: string;
}

test('directed invalidations: no read older than an acknowledged write, with an idle fleet and a frozen holder', async () => {
  const redis = await RedisServer.start();
  const hub = await HubProcess.start({ args: ['--config', writeConfig(config, 'hotkey-ckh-')] });
  const proxy = await TcpProxy.start(hub.port);
  const workers: Worker[] = [];
  const plain = new Redis(redis.url);
  const holderRedis = new Redis(redis.url);
  const holder = new HotKeyClient({
    app: APP,
    hubs: `ws://127.0.0.1:${proxy.port}`,
    instanceId: 'holder',
    surgeLocal: { jobAccesses: 3, confirmWindows: 1000 },
  });
  const writer = new HotKeyClient({ app: APP, hubs: hub.url, instanceId: 'writer' });
  const reads: Read[] = [];
  const acks: Ack[] = [];
  let phase = 'warm-up';
  let running = true;
  try {
    await Promise.all([
      holder.ready({ signal: AbortSignal.timeout(10_000) }),
      writer.ready({ signal: AbortSignal.timeout(10_000) }),
    ]);
    const fleet = SimFleet.start(workers, 2);
    await fleet.grow(hub.url, IDLE, 60_000);
    let version = 0;
    await plain.set(KEY, String(version));
    await within('the first acked write', writer.invalidate(KEY), START_FENCE_MS + 5000);
    const load = async (k: string) => Number(await holderRedis.get(k));
    // reads in bursts of one job: each surges the key locally when it is not held
    const reader = (async () => {
      while (running) {
        const at = now();
        const p = phase;
        const got = await Promise.all(Array.from({ length: 4 }, () => holder.get(KEY, load)));
        for (const v of got) reads.push({ at, version: v, phase: p });
        await delay(2);
      }
    })();
    const write = async () => {
      const v = ++version;
      const p = phase;
      await plain.set(KEY, String(v));
      const r = await writer.invalidate(KEY);
      acks.push({ at: now(), version: v, fenced: r.fenced, ms: r.ms, phase: p });
    };
    const writeFor = async (ms: number) => {
      const end = now() + ms;
      while (now() < end) {
        await write();
        await delay(15);
      }
    };

    phase = 'holder connected';
    await writeFor(PHASE_MS);
    const held = holder.stats();
    assert.ok(held.holdsSent > 5, `the holder registered its surges (${held.holdsSent})`);

    phase = 'holder link frozen';
    await waitFor('the key held locally', () => holder.isHot(KEY), 3000);
    await delay(50);
    proxy.freeze();
    const frozenAt = now();
    await write(); // in flight while the holder's link is frozen
    const frozenAck = acks.at(-1)!;
    const waited = frozenAck.at - frozenAt;
    await writeFor(1000);
    proxy.thaw();
    phase = 'holder link back';
    await writeFor(PHASE_MS);
    running = false;
    await reader;

    // the check: a read that began after an ack of version v returns v or newer
    const sortedAcks = [...acks].sort((a, b) => a.at - b.at);
    const stale: string[] = [];
    let i = 0;
    let acked = -1;
    for (const r of [...reads].sort((a, b) => a.at - b.at)) {
      while (i < sortedAcks.length && sortedAcks[i]!.at < r.at) acked = Math.max(acked, sortedAcks[i++]!.version);
      if (r.version < acked) stale.push(`${r.phase}: read v${r.version} after v${acked} was acked`);
    }
    const fleetStats = await fleet.stats();
    const byPhase = (p: string) =>
      acks
        .filter((a) => a.phase === p)
        .map((a) => a.ms)
        .sort((a, b) => a - b);
    for (const p of ['holder connected', 'holder link frozen', 'holder link back']) {
      const ms = byPhase(p);
      const n = reads.filter((r) => r.phase === p).length;
      console.log(
        `  ${p.padEnd(20)} ${String(n).padStart(6)} reads, ${String(ms.length).padStart(4)} acked writes, ack ms p50 ${(ms[ms.length >> 1] ?? 0).toFixed(1)} max ${(ms.at(-1) ?? 0).toFixed(1)}`,
      );
    }
    console.log(
      `  write in flight at the freeze: acked after ${waited.toFixed(0)} ms, fenced ${JSON.stringify(frozenAck.fenced)}; idle fleet applied ${fleetStats.applied} invalidations; holder: ${JSON.stringify({ holdsSent: holder.stats().holdsSent, holdsWritten: holder.stats().holdsWritten, holdsRefused: holder.stats().holdsRefused })}`,
    );
    for (const s of stale.slice(0, 5)) console.log(`  STALE ${s}`);
    assert.is(stale.length, 0, 'stale reads after an acknowledged write');
    assert.equal(frozenAck.fenced, ['holder'], 'the frozen holder is named fenced');
    assert.ok(waited >= 1000, `the ack waited for the frozen holder's lease (${waited.toFixed(0)} ms)`);
    assert.is(fleetStats.applied, 0, 'the idle fleet heard none of the writes');
  } finally {
    running = false;
    for (const w of workers) await w.kill();
    await holder.close();
    await writer.close();
    plain.disconnect();
    holderRedis.disconnect();
    await proxy.close();
    await hub.stop('SIGKILL');
    await redis.stop();
  }
});

test.run();
