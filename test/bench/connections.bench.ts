/**
 * Benchmark 12 — connections: one hub process holding 1,000, 5,000 and 10,000 SDK connections
 * (simulated instances speaking the real protocol, sim-sdk.worker.ts, in GENERATORS processes).
 *
 * At each step: the hub's RSS and heap (after a full GC) per connection, over the hub with none;
 * and fan-out: a trigger connection reports a fresh key over the threshold, every instance records
 * when the Promote arrived; p50 / p99 over every (instance, promotion) pair, from the trigger's
 * send. The trigger joins after the step's instances, so it is last in the hub's broadcast order:
 * its own receipt ("hub done") is when the hub had written the frame to every socket. Delivery
 * beyond that is the receivers' side (generator processes on the same 2 cores). CPU time of the
 * hub and of the generators over the promotions says which side the box spends its time on: the
 * last delivery cannot come before (hub + generators) CPU / cores, however fast the hub. The hub's
 * CPU is split into user and system: on loopback the kernel's part of every write includes the
 * receiver's side of the segment (TCP input, waking the reader), which a real network puts on the
 * receiving host. Then a few promotions with the generator processes stopped (SIGSTOP) while the
 * hub writes: the trigger's receipt is then the hub's own time to put the frame on every socket,
 * with the box's cores to itself (the kernel still queues each segment into the stopped receiver).
 *
 * Each promotion is measured on a hub that is not writing another broadcast: the rule keeps
 * promoted keys hot for the whole run (hotMs, demoteWindows), so no Demote of an earlier key
 * (one more 10,000-socket fan-out, ~3 s after each promotion with the default rule) is in flight.
 * Two broadcasts back to back take twice as long; that is a different figure.
 *
 * Lease renewals: every instance asks every leaseMs / 4 as a real SDK does. The hub's CPU for that
 * traffic over its CPU idle, and the fan-out measured again while it flows.
 *
 * At 5,000: thin spread — a key at 1.2 × the threshold in total, spread evenly over every instance
 * (0.24 accesses/s each), must be promoted; the Report traffic it costs is measured.
 */
import WebSocket from 'ws';
import { once } from 'node:events';
import os from 'node:os';
import { decodeServerMessage, encode, MsgType, PROTOCOL_VERSION } from '../../sdk/src/wire/protocol.ts';
import { benchMain, percentile, type BenchRow, type Worker } from './harness.ts';
import { startServer } from './server-process.ts';
import { SimFleet } from './sim-fleet.ts';
import { DEFAULT_TUNABLES } from '../../hub/src/core/tunables.ts';
import { hostNow } from '../support/host-clock.ts';
import { delay } from '../support/wait.ts';

const THRESHOLD = 1000;
const GENERATORS = 2;
const THIN_FACTOR = 1.2;
const THIN_AT = 5000;
/** promoted keys stay hot through the run: no Demote fan-out overlaps a measured promotion */
const NO_DEMOTION = { hotMs: 600_000, demoteWindows: 100 };
/** promotions written while the receivers are stopped: the hub's own time */
const STOPPED_PROMOTIONS = 3;
/** how often each simulated SDK asks for a lease: a real one asks every leaseMs / 4 */
const LEASE_ASK_MS = DEFAULT_TUNABLES.leaseMs / 4;
/** CPU is measured over this long, idle and with lease traffic */
const LEASE_SPAN_MS = 2000;

const wallNow = hostNow;

/** A raw SDK connection that reports keys over the threshold and notes when each came back promoted. */
async function trigger(url: string, name: string) {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await once(ws, 'open', { signal: AbortSignal.timeout(30_000) });
  const greeted = once(ws, 'message', { signal: AbortSignal.timeout(30_000) });
  ws.send(
    encode({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'bench', instance: name, sdk: 'bench-trigger', role: 'sdk' }),
  );
  await greeted;
  const back = new Map<string, number>();
  ws.on('message', (data: Buffer) => {
    const at = wallNow();
    const m = decodeServerMessage(data);
    if (m.t === MsgType.Promote && !back.has(m.key)) back.set(m.key, at);
  });
  return {
    send: (key: string) => ws.send(encode({ t: MsgType.Report, keys: [key], counts: [2 * THRESHOLD] })),
    back,
    close: () => ws.terminate(),
  };
}

const fmtMiB = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

benchMain(async ({ quick }) => {
  // BENCH_CONNECTIONS=10000 (comma-separated): other steps, e.g. one step under BENCH_CPU_PROF
  const steps = process.env.BENCH_CONNECTIONS?.split(',').map(Number) ?? (quick ? [200, 1000] : [1000, 5000, 10_000]);
  const promotions = quick ? 3 : 10;
  const rows: BenchRow[] = [];
  // default tunables: the generators keep 2 × 32 handshakes in flight, within the per-address cap
  const server = await startServer('hub', { threshold: THRESHOLD, rule: NO_DEMOTION });
  const workers: Worker[] = [];
  try {
    const fleet = SimFleet.start(workers, GENERATORS);
    await delay(500);
    const base = { heap: await server.gcHeap(), rss: (await server.stats()).rss };
    for (const n of steps) {
      try {
        await fleet.grow(server.url, n, 300_000);
      } catch (err) {
        // a step the box could not connect is reported, and the steps before it stand
        rows.push({
          bench: `12 connections ${n.toLocaleString('en')}`,
          metric: 'connected',
          ours: NaN,
          unit: '',
          better: 'higher',
          note: `${(err as Error).message.slice(0, 120)}; load ${os.loadavg()[0]!.toFixed(1)}`,
        });
        break;
      }
      const t = await trigger(server.url, `trigger-${n}`);
      // Config frames (instance count) settle, sockets go idle
      await delay(2000);
      const heap = await server.gcHeap();
      const rss = (await server.stats()).rss;
      const load = os.loadavg()[0]!.toFixed(1);

      /** `promotions` fresh keys over the threshold, one at a time: every delivery, and the trigger's receipts */
      const fanOut = async (prefix: string) => {
        const delivery: number[] = [];
        const hubDone: number[] = [];
        let missing = 0;
        for (let p = 0; p < promotions; p++) {
          const key = `${prefix}:${n}:${p}`;
          const sentAt = wallNow();
          t.send(key);
          const got = await fleet.collect(key, 10_000);
          for (const at of got.times) delivery.push(at - sentAt);
          missing += got.missing;
          const back = t.back.get(key);
          if (back !== undefined) hubDone.push(back - sentAt);
          await delay(200);
        }
        return { delivery, hubDone, missing };
      };
      /** what a fan-out p99 row says beside its figure: when the hub was done, and what never arrived */
      const fanOutNote = (hubDone: number[], missing: number) =>
        `${promotions} promotions; hub done writing p50 ${percentile(hubDone, 50).toFixed(1)} / max ${Math.max(...hubDone).toFixed(1)} ms${missing ? `; ${missing} deliveries missing` : ''}`;
      const hub0 = await server.stats();
      const gen0 = await fleet.stats();
      const { delivery, hubDone, missing: fanMissing } = await fanOut('fan');
      let missing = fanMissing;
      const hub1 = await server.stats();
      const gen1 = await fleet.stats();
      // the hub's own part: the generators stopped while it writes (on loopback the kernel queues
      // every segment into a stopped receiver's socket), the trigger's receipt is the last write
      const stoppedDone: number[] = [];
      for (let p = 0; p < STOPPED_PROMOTIONS; p++) {
        const key = `fan-stopped:${n}:${p}`;
        for (const w of fleet.workers) w.child.kill('SIGSTOP');
        try {
          await delay(50);
          const sentAt = wallNow();
          t.send(key);
          const deadline = sentAt + 10_000;
          while (!t.back.has(key) && wallNow() < deadline) await delay(1);
          stoppedDone.push((t.back.get(key) ?? Infinity) - sentAt);
        } finally {
          for (const w of fleet.workers) w.child.kill('SIGCONT');
        }
        missing += (await fleet.collect(key, 10_000)).missing;
        await delay(200);
      }
      const leases = await leaseTraffic(server, fleet, () => fanOut('fan-leased'));
      t.close();
      const hubCpu = hub1.cpuMs - hub0.cpuMs;
      const genCpu = gen1.cpuMs - gen0.cpuMs;
      const perSocketUs = (ms: number) => ((ms / promotions / n) * 1000).toFixed(1);
      const cores = os.availableParallelism();
      const bench = `12 connections ${n.toLocaleString('en')}`;
      rows.push(
        {
          bench,
          metric: 'hub RSS per connection',
          ours: (rss - base.rss) / n,
          unit: 'B',
          better: 'lower',
          note: `hub RSS ${fmtMiB(rss)} (${fmtMiB(base.rss)} with none), ${GENERATORS} generator processes; load ${load}`,
        },
        {
          bench,
          metric: 'hub heap per connection (after GC)',
          ours: (heap - base.heap) / n,
          unit: 'B',
          better: 'lower',
          note: `heap ${fmtMiB(heap)} (${fmtMiB(base.heap)} with none)`,
        },
        {
          bench,
          metric: 'promotion fan-out p99',
          ours: percentile(delivery, 99),
          unit: 'ms',
          better: 'lower',
          target: n >= 10_000 ? { reach: 100 } : undefined,
          note: fanOutNote(hubDone, missing),
        },
        {
          bench,
          metric: 'promotion fan-out p50',
          ours: percentile(delivery, 50),
          unit: 'ms',
          better: 'lower',
        },
        {
          bench,
          metric: 'hub wrote every socket, receivers stopped, max',
          ours: Math.max(...stoppedDone),
          unit: 'ms',
          better: 'lower',
          note: `${STOPPED_PROMOTIONS} promotions, the generator processes stopped while the hub writes (fan-out threads: ${DEFAULT_TUNABLES.fanoutThreads} at most, ${Math.min(DEFAULT_TUNABLES.fanoutThreads, cores - 1)} here); every receiver got it after`,
        },
        {
          bench,
          metric: 'CPU per promotion: hub (vs generators)',
          ours: hubCpu / promotions,
          baseline: genCpu / promotions,
          unit: 'ms',
          better: 'lower',
          note: `the receivers share the ${cores} cores: (hub + generators) / ${cores} = ${((hubCpu + genCpu) / promotions / cores).toFixed(0)} ms is the box's floor for the last delivery; hub per socket: user ${perSocketUs(hub1.userMs - hub0.userMs)} µs, system ${perSocketUs(hub1.systemMs - hub0.systemMs)} µs`,
        },
      );

      rows.push(
        {
          bench,
          metric: `lease traffic, every SDK asking each ${LEASE_ASK_MS} ms: hub CPU`,
          ours: leases.hubPct,
          unit: '% of a core',
          better: 'lower',
          note: `${Math.round(leases.asksPerS).toLocaleString('en')} asks/s, ${Math.round(leases.grantsPerS).toLocaleString('en')} grants/s; hub ${leases.hubUsPerAsk.toFixed(1)} µs per ask and grant, over idle; the generators ${leases.genPct.toFixed(0)} % of a core`,
        },
        {
          bench,
          metric: 'promotion fan-out p99, with that lease traffic',
          ours: percentile(leases.fan.delivery, 99),
          unit: 'ms',
          better: 'lower',
          note: fanOutNote(leases.fan.hubDone, leases.fan.missing),
        },
      );

      if (n === THIN_AT || (quick && n === steps.at(-1))) rows.push(...(await thinSpread(fleet, server.url, n)));
    }
  } finally {
    await Promise.all(workers.map((w) => w.kill()));
    await server.stop();
  }
  return rows;
});

/**
 * What lease renewals cost the hub: its CPU while every instance asks every LEASE_ASK_MS (as a
 * real SDK does, leaseMs / 4) over its CPU idle, per second and per ask; then `fanOut` runs with
 * the asks still coming, as a real fleet's promotions do.
 */
async function leaseTraffic<T>(
  server: Awaited<ReturnType<typeof startServer>>,
  fleet: SimFleet,
  fanOut: () => Promise<T>,
) {
  const cpu = async () => ({ hub: (await server.stats()).cpuMs, fleet: await fleet.stats(), at: wallNow() });
  const idle0 = await cpu();
  await delay(LEASE_SPAN_MS);
  const idle1 = await cpu();
  fleet.leases(LEASE_ASK_MS);
  try {
    await delay(2 * LEASE_ASK_MS); // every instance asked twice: steady
    const on0 = await cpu();
    await delay(LEASE_SPAN_MS);
    const on1 = await cpu();
    const fan = await fanOut();
    const idleS = (idle1.at - idle0.at) / 1000;
    const onS = (on1.at - on0.at) / 1000;
    const hubMsPerS = (on1.hub - on0.hub) / onS - (idle1.hub - idle0.hub) / idleS;
    const asksPerS = (on1.fleet.leaseAsks - on0.fleet.leaseAsks) / onS;
    return {
      hubPct: hubMsPerS / 10,
      hubUsPerAsk: (hubMsPerS * 1000) / Math.max(1, asksPerS),
      genPct: ((on1.fleet.cpuMs - on0.fleet.cpuMs) / onS - (idle1.fleet.cpuMs - idle0.fleet.cpuMs) / idleS) / 10,
      asksPerS,
      grantsPerS: (on1.fleet.grants - on0.fleet.grants) / onS,
      fan,
    };
  } finally {
    fleet.leases(0);
  }
}

/** A key at THIN_FACTOR × threshold spread evenly over every instance: promoted, and at what report cost. */
async function thinSpread(fleet: SimFleet, _url: string, n: number): Promise<BenchRow[]> {
  const key = `thin:${n}`;
  const startAt = wallNow() + 200;
  const before = await fleet.stats();
  fleet.surge(key, THIN_FACTOR * THRESHOLD, startAt, 20_000);
  const got = await fleet.collect(key, 20_000);
  const after = await fleet.stats();
  const spanS = (wallNow() - startAt) / 1000;
  const reports = after.reports - before.reports;
  const bytes = after.reportBytes - before.reportBytes;
  const bench = `12 thin spread ${n.toLocaleString('en')}`;
  return [
    {
      bench,
      metric: `key at ${THIN_FACTOR}× threshold over all: every SDK hot after`,
      ours:
        got.missing > 0
          ? NaN
          : percentile(
              got.times.map((t) => t - startAt),
              100,
            ),
      unit: 'ms',
      better: 'lower',
      note: `${((THIN_FACTOR * THRESHOLD) / n).toFixed(2)} accesses/s per instance${got.missing ? `; ${got.missing} never hot` : ''}`,
    },
    {
      bench,
      metric: 'report traffic while it spreads',
      ours: reports / spanS,
      unit: 'frames/s',
      better: 'lower',
      note: `${Math.round(bytes / spanS).toLocaleString('en')} B/s, ${(bytes / Math.max(1, reports)).toFixed(0)} B/frame over ${spanS.toFixed(1)} s`,
    },
  ];
}
