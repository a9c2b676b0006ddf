/**
 * Benchmark 3 — fan-out: one promotion delivered to 1,000 SDK connections (real HotKeyClients in
 * two processes). A trigger connection reports a fresh key over the threshold in one frame; each
 * instance records when its 'promote' event fired. Delivery time is measured from the trigger's
 * send, so it includes the hub's decision and every socket write. The hub's CPU per delivery is
 * its CPU time over the promotions minus its idle CPU (pings, ticks) over the same span.
 * The naive hub (JSON, one stringify per broadcast) runs the same with naive clients.
 */
import WebSocket from 'ws';
import { once } from 'node:events';
import { encode, MsgType, PROTOCOL_VERSION } from '../../sdk/src/wire/protocol.ts';
import { benchMain, percentile, type BenchRow, type Worker } from './harness.ts';
import { startServer } from './server-process.ts';
import { connectSdkWorkers } from './sdk-workers.ts';
import { hostNow } from '../support/host-clock.ts';
import { delay } from '../support/wait.ts';

const THRESHOLD = 1000;
const WORKERS = 2;

async function trigger(url: string, kind: 'sdk' | 'naive'): Promise<(key: string) => void> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await once(ws, 'open', { signal: AbortSignal.timeout(10_000) });
  const greeted = once(ws, 'message', { signal: AbortSignal.timeout(10_000) });
  if (kind === 'sdk')
    ws.send(
      encode({
        t: MsgType.Hello,
        v: PROTOCOL_VERSION,
        app: 'bench',
        instance: 'trigger',
        sdk: 'bench-trigger',
        role: 'sdk',
      }),
    );
  else ws.send(JSON.stringify({ type: 'hello', app: 'bench', instance: 'trigger' }));
  await greeted;
  return (key) =>
    ws.send(
      kind === 'sdk'
        ? encode({ t: MsgType.Report, keys: [key], counts: [2 * THRESHOLD] })
        : JSON.stringify({ type: 'report', keys: { [key]: 2 * THRESHOLD } }),
    );
}

async function run(kind: 'sdk' | 'naive', sdks: number, promotions: number) {
  const server = await startServer(kind === 'sdk' ? 'hub' : 'naive', { threshold: THRESHOLD });
  const workers: Worker[] = [];
  try {
    await connectSdkWorkers(workers, server.url, sdks, kind, 120_000, WORKERS);
    const send = await trigger(server.url, kind);
    await delay(1000);

    // idle CPU over the same span the promotions take
    const spanMs = promotions * 200;
    const idle0 = await server.stats();
    const t0 = performance.now();
    await delay(spanMs);
    const idle1 = await server.stats();
    const idleRate = (idle1.cpuMs - idle0.cpuMs) / (performance.now() - t0);

    const delivery: number[] = [];
    /** per promotion: [p50, max] — tells a stall of the hub (all slow) from slow receivers (a tail) */
    const perPromotion: [number, number][] = [];
    let missing = 0;
    const busy0 = await server.stats();
    const t1 = performance.now();
    for (let p = 0; p < promotions; p++) {
      const key = `fan:${kind}:${p}`;
      const sentAt = hostNow();
      send(key);
      for (const w of workers) w.send({ type: 'collect', key, deadlineMs: 5000 });
      const results = await Promise.all(
        workers.map((w) => w.waitFor<{ times: number[]; missing: number }>('promoted', 15_000)),
      );
      const these: number[] = [];
      for (const r of results) {
        for (const t of r.times) these.push(t - sentAt);
        missing += r.missing;
      }
      delivery.push(...these);
      perPromotion.push([percentile(these, 50), Math.max(...these)]);
      if (process.env.BENCH_DEBUG) console.error(kind, p, perPromotion.at(-1));
      await delay(150);
    }
    const busy1 = await server.stats();
    const activeCpuMs = busy1.cpuMs - busy0.cpuMs - idleRate * (performance.now() - t1);
    const deliveries = delivery.length;
    const slowest = perPromotion.reduce((a, b) => (b[1] > a[1] ? b : a), [0, 0]);
    const spread = `slowest promotion p50 ${slowest[0].toFixed(0)} / max ${slowest[1].toFixed(0)} ms`;
    return { delivery, missing, spread, cpuPerDeliveryUs: (Math.max(0, activeCpuMs) * 1000) / Math.max(1, deliveries) };
  } finally {
    await Promise.all(workers.map((w) => w.kill()));
    await server.stop();
  }
}

benchMain(async ({ quick }) => {
  const sdks = quick ? 200 : 1000;
  const promotions = quick ? 5 : 20;
  const ours = await run('sdk', sdks, promotions);
  const naive = await run('naive', sdks, promotions);
  const rows: BenchRow[] = [
    {
      bench: `3 fan-out ${sdks} SDKs`,
      metric: 'promotion delivery p99',
      ours: percentile(ours.delivery, 99),
      baseline: percentile(naive.delivery, 99),
      unit: 'ms',
      better: 'lower',
      note: `${promotions} promotions, ${WORKERS} SDK processes; ours ${ours.spread}, naive ${naive.spread}${ours.missing ? `; ${ours.missing} deliveries missing` : ''}${naive.missing ? `; naive missing ${naive.missing}` : ''}`,
    },
    {
      bench: `3 fan-out ${sdks} SDKs`,
      metric: 'promotion delivery p50',
      ours: percentile(ours.delivery, 50),
      baseline: percentile(naive.delivery, 50),
      unit: 'ms',
      better: 'lower',
    },
    {
      bench: `3 fan-out ${sdks} SDKs`,
      metric: 'hub CPU per delivery',
      ours: ours.cpuPerDeliveryUs,
      baseline: naive.cpuPerDeliveryUs,
      unit: 'µs',
      better: 'lower',
    },
  ];
  return rows;
});
