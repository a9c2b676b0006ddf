/**
 * The comparison page, generated from one run of the versus benchmark: docs/comparison.md and its
 * charts in docs/comparison/ (svg-chart.ts). Every figure, table and chart comes from the run; the
 * prose around them is this template, and the statements of who wins where are computed from the
 * figures, so a re-run after a change to hotkey rewrites them truthfully.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Machine } from './report.ts';
import { barChart, lineChart } from './svg-chart.ts';
import { PROMISES } from './versus-promises.ts';
import { mean, PROBES } from './versus-rows.ts';
import { SURGE_HEAD_MS, type Plan, type Probe, type Result } from './versus-scenario.ts';
import { LABEL, PATH_OF, type SystemName } from './versus-systems.ts';

export interface Run {
  plan: Plan;
  quick: boolean;
  machine: Machine;
  /** 1-minute load average after each system */
  loads: number[];
  seconds: number;
  build: string;
  failed: string[];
}

const MB = 1024 * 1024;
const CHARTS = 'comparison';
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : 'n/a');
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)]! : Number.NaN;
};
const isHotkey = (s: SystemName) => s.startsWith('hotkey');
const PATH_WORD = { hub: 'hub link', redis: 'Redis connection', bus: 'bus connection' } as const;

function staleCell(p: Probe | undefined, why: string | undefined): string {
  if (!p) return why ? `n/a (${why})` : 'n/a';
  const errors = p.readErrors + p.writeErrors;
  const unsure = p.unconfirmed
    ? `; ${p.staleConfirmed} after confirmed writes (${p.unconfirmed} writes unconfirmed)`
    : '';
  return `${p.stale} of ${p.reads}${p.missing ? ` (${p.missing} absent)` : ''}${unsure}${errors ? `, ${errors} errors` : ''}`;
}

/** From the start of the pairs after a fault to the first that succeeded. */
function recovery(p: Probe | undefined): string {
  if (!p) return 'n/a';
  return p.firstOkMs === undefined ? 'no pair answered within 20 s' : `${f0(p.firstOkMs)} ms`;
}

function table(head: string[], rows: string[][]): string {
  return [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => ' --- ').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

function charts(results: Result[], plan: Plan): Record<string, string> {
  const groups = PROBES;
  const stale = barChart({
    title: 'Stale reads after an acknowledged write on another instance (% of reads)',
    yLabel: '% of reads stale',
    groups: groups.map((g) => g.replace('after ', 'after\u00a0')),
    series: results.map((r) => ({
      name: LABEL[r.system],
      values: groups.map((g) => {
        const p = r.probes[g];
        return p && p.reads > 0 ? (100 * p.stale) / p.reads : Number.NaN;
      }),
    })),
    yMax: 100,
    label: (v) => (v === 0 ? '0' : v < 1 ? '<1' : v.toFixed(0)),
    width: 980,
  });
  const x = results[0]?.timeline.readP99.map((_, i) => ((i + 0.5) * plan.bucketMs) / 1000) ?? [];
  const surgeAt = plan.beforeMs / 1000;
  const markers = [
    { x: surgeAt, label: 'surge' },
    { x: surgeAt + SURGE_HEAD_MS / 1000, label: 'first 2 s' },
  ];
  const p99 = lineChart({
    title: `HTTP read p99 per ${plan.bucketMs} ms through the surge (log scale)`,
    xLabel: 's since the traffic started',
    yLabel: 'read p99, ms',
    x,
    series: results.map((r) => ({ name: LABEL[r.system], values: r.timeline.readP99 })),
    log: true,
    yMin: 0.5,
    markers,
  });
  const perSec = 1000 / plan.bucketMs;
  const gets = lineChart({
    title: 'The flash key’s GETs reaching Redis, per second (log scale; 0 drawn at the floor)',
    xLabel: 's since the traffic started',
    yLabel: 'flash GETs/s at Redis',
    x,
    series: results.map((r) => ({ name: LABEL[r.system], values: r.counts.flashBuckets.map((n) => n * perSec) })),
    log: true,
    yMin: 1,
    markers,
  });
  return { 'stale.svg': stale, 'p99.svg': p99, 'gets.svg': gets };
}

/** How the flash key's Redis node was made the bottleneck, as the run went. */
function bottleneck(results: Result[], plan: Plan): string {
  const limits = [...new Set(results.map((r) => r.redisLimit))];
  const value = `its value is ${plan.flashBytes / 1024} KiB, so that every read of it that reaches Redis moves ${plan.flashBytes / 1024} KiB`;
  if (plan.redisCpuPercent === undefined)
    return `**The flash key's Redis node is loaded by a large value**: ${value}; redis-server is not CPU-limited.`;
  if (limits.length === 1 && limits[0]!.endsWith('of one core'))
    return `**The flash key's Redis node is made the bottleneck**: redis-server is CPU-limited to ${plan.redisCpuPercent} % of one core (a Linux CFS bandwidth quota on a control group of its own: it runs freely while it has little to do and is throttled once it used its share), and ${value}. Every GET of it that reaches Redis spends that scarce CPU; a system that keeps the surge's reads away leaves Redis idle.`;
  return `**The flash key's Redis node was meant to be CPU-limited to ${plan.redisCpuPercent} % of one core, and was not everywhere**: ${results.map((r) => `${LABEL[r.system]}: ${r.redisLimit}`).join('; ')}. The flash key's ${value}.`;
}

/**
 * Comparisons where the winner is decided from the run's figures: hotkey's better adapter against
 * the best peer (the caching ones only where a cache is what is compared). Equal figures are even.
 */
function verdicts(results: Result[]): { peerWins: string[]; hotkeyWins: string[]; even: string[] } {
  const hot = results.filter((r) => isHotkey(r.system));
  const peers = results.filter((r) => !isHotkey(r.system));
  const cached = peers.filter((r) => r.system !== 'ioredis');
  const peerWins: string[] = [];
  const hotkeyWins: string[] = [];
  const even: string[] = [];
  const compare = (
    what: string,
    value: (r: Result) => number,
    among: Result[],
    unit: string,
    better: 'lower' | 'higher',
    fmt = f1,
  ) => {
    const ok = (r: Result) => Number.isFinite(value(r));
    const hs = hot.filter(ok);
    const ps = among.filter(ok);
    if (!hs.length || !ps.length) return;
    const pick = (rs: Result[]) =>
      rs.reduce((a, b) => ((better === 'lower' ? value(b) < value(a) : value(b) > value(a)) ? b : a));
    const h = pick(hs);
    const p = pick(ps);
    const line = `${what}: ${hs.map((r) => `${LABEL[r.system]} ${fmt(value(r))}`).join(', ')} ${unit}; best peer ${LABEL[p.system]} ${fmt(value(p))} ${unit}.`;
    if (fmt(value(p)) === fmt(value(h))) even.push(line);
    else if (better === 'lower' ? value(p) < value(h) : value(p) > value(h)) peerWins.push(line);
    else hotkeyWins.push(line);
  };
  const stall = (r: Result) => r.probes.stall;
  compare(
    'Writes acknowledged while the reader’s invalidation path was stalled',
    (r) => stall(r)?.acked ?? Number.NaN,
    cached,
    'writes',
    'higher',
    f0,
  );
  compare(
    'Median write latency while the path was stalled',
    (r) => median(stall(r)?.writeMs ?? []),
    cached,
    'ms',
    'lower',
  );
  /** stale reads in % of the reads a probe made (NaN where it made none: not run, or every read failed) */
  const stalePct = (name: (typeof PROBES)[number]) => (r: Result) => {
    const p = r.probes[name];
    return p && p.reads > 0 ? (100 * p.stale) / p.reads : Number.NaN;
  };
  for (const name of PROBES)
    compare(`Stale reads, ${name}`, stalePct(name), cached, '% of reads', 'lower', (x) =>
      x > 0 && x < 0.1 ? '<0.1' : f1(x),
    );
  compare(
    'Failed requests of the probes across the Redis restart and just after',
    (r) =>
      (['redis restart', 'after redis restart'] as const).reduce(
        (a, p) => a + (r.probes[p] ? r.probes[p]!.readErrors + r.probes[p]!.writeErrors : 0),
        0,
      ),
    peers,
    'errors',
    'lower',
    f0,
  );
  compare(
    'Service CPU per request before the surge (cold reads)',
    (r) => r.cpuPerRequest.before,
    peers,
    'µs',
    'lower',
    f0,
  );
  compare('Service CPU per request during the surge', (r) => r.cpuPerRequest.surge, peers, 'µs', 'lower', f0);
  compare('Heap after GC per instance', (r) => mean(r.heap) / MB, peers, 'MB', 'lower');
  compare('RSS per instance', (r) => mean(r.rss) / MB, peers, 'MB', 'lower', f0);
  compare('HTTP read p99 before the surge', (r) => r.before.reads.p99, peers, 'ms', 'lower');
  compare('HTTP read p99 during the surge', (r) => r.surge.reads.p99, peers, 'ms', 'lower');
  compare('HTTP write p99 during the surge', (r) => r.surge.writes.p99, peers, 'ms', 'lower');
  compare('The flash key’s GETs at Redis in the surge’s first 2 s', (r) => r.flashFirst2s, peers, 'GETs', 'lower', f0);
  compare('The flash key’s GETs at Redis per second, steady', (r) => r.flashSteadyPerSec, peers, 'GETs/s', 'lower');
  compare('Redis tracking items', (r) => r.trackingItems, peers, 'items', 'lower', f0);
  return { peerWins, hotkeyWins, even };
}

/** Writes the page and its charts under `dir`; returns the paths written. */
export function writePage(dir: string, results: Result[], run: Run): string[] {
  const { plan, machine } = run;
  mkdirSync(join(dir, CHARTS), { recursive: true });
  const written: string[] = [];
  for (const [name, svg] of Object.entries(charts(results, plan))) {
    const path = join(dir, CHARTS, name);
    writeFileSync(path, svg);
    written.push(path);
  }
  // hotkey's rule covers the writes it confirmed; a write that resolved unconfirmed was reported to the caller
  const violations = results.flatMap((r) =>
    isHotkey(r.system)
      ? PROBES.filter((p) => (r.probes[p]?.staleConfirmed ?? 0) > 0).map(
          (p) => `${LABEL[r.system]}: ${r.probes[p]!.staleConfirmed} stale of ${r.probes[p]!.reads} reads (${p})`,
        )
      : [],
  );
  const unconfirmed = results.flatMap((r) =>
    isHotkey(r.system)
      ? PROBES.filter((p) => (r.probes[p]?.unconfirmed ?? 0) > 0).map(
          (p) =>
            `${LABEL[r.system]}, ${p}: ${r.probes[p]!.unconfirmed} of ${r.probes[p]!.acked} writes resolved with their invalidation reported failed, ${r.probes[p]!.stale} stale reads after them`,
        )
      : [],
  );
  const { peerWins, hotkeyWins, even } = verdicts(results);
  const na = (r: Result, fault: 'stall' | 'hub-restart') => r.notApplicable[fault];
  const out: string[] = [
    '# hotkey against what users would pick instead',
    '',
    '<!-- Generated by `pnpm bench --only versus` (test/bench/versus-page.ts, versus.bench.ts): every figure, table and chart comes from one run. Edit the template, then re-run; do not edit this file. -->',
    '',
    `A team protecting Redis from a hot key weighs hotkey against what is already in its stack. This page runs one service over the same Redis and the same traffic with each of them and says, in the terms a user feels, what happened: does a read right after my write on another instance see it, also when something fails? What happens to p99 and to errors when the hot key's Redis node is the bottleneck? What does it cost my service?`,
    '',
    run.quick
      ? '**This page comes from a `--quick` run: smoke figures, not meaningful.**'
      : `Measured ${machine.date.slice(0, 10)} on ${machine.cpus} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, Node ${machine.node}, shared with other work: load average ${machine.loadStart.toFixed(1)} at the start, ${run.loads.map((l) => l.toFixed(1)).join(', ')} after each system; ${(run.seconds / 60).toFixed(1)} minutes. Absolute figures move with the load; compare systems within the run.`,
    ...(run.failed.length ? ['', `Systems that did not finish: ${run.failed.join('; ')}.`] : []),
    '',
    '## The run',
    '',
    `One service (node:http) in ${plan.processes} processes, one instance each, over one redis-server, for every system on a fresh stack. The traffic (one load process, HTTP keep-alive, every request with a 3 s deadline): ${plan.zipfRate} reads/s of Zipf(1.1) items over ${plan.zipfKeys.toLocaleString('en')} keys and ${plan.writeRate} writes/s of Zipf items spread over every instance; after ${plan.beforeMs / 1000} s a flash sale: ${plan.flashRate} reads/s of one key. ${bottleneck(results, plan)} The service answers a read with the item's version and size only, so that the HTTP leg costs the same for every system whatever the value's size. Every connection to Redis goes through a counting proxy, which tells the flash key's GETs from the others whatever prefix a library puts on it.`,
    '',
    `Stale reads are probed on the flash key while the traffic goes on, the sale past its peak (${plan.tailRate} reads/s of the flash key, so that a CPU-limited Redis can drain what the surge queued): instance 0 writes a new version and, once its PUT answered, instance 1 reads it. A read is **stale** when it answers a version older than the newest one whose write had been acknowledged before the read began. Calm: ${plan.pairs} such pairs. Faults, each followed by ${plan.afterPairs} pairs: instance 1's invalidation path (${Object.entries(
      PATH_WORD,
    )
      .map(([k, v]) => `${k}: ${v}`)
      .join(
        ', ',
      )}) stalled ${plan.stallMs / 1000} s through a TCP proxy that stops forwarding without closing; the items' redis-server killed and restarted ${plan.downMs / 1000} s later from a snapshot taken just before (no acknowledged write is lost with it); the hub (hotkey) or the bus redis-server (bentocache, cacheable) killed and restarted ${plan.downMs / 1000} s later. During a fault a writer and a reader go as fast as their answers come, for the fault and ${plan.recoverMs / 1000} s after the part is back: the writes acknowledged meanwhile are the price a system pays for what it promises.`,
    '',
    '## In one table',
    '',
    table(
      [
        'system',
        'stale: calm',
        'stale: stalled path',
        'writes acked in the stall',
        'stale: Redis restart',
        'stale: hub/bus restart',
        `flash GETs at Redis, first ${SURGE_HEAD_MS / 1000} s / steady per s`,
        'read p99 in the surge',
        'CPU per request',
        'heap per instance',
      ],
      results.map((r) => [
        LABEL[r.system],
        staleCell(r.probes.calm, undefined),
        staleCell(r.probes.stall, na(r, 'stall')),
        r.probes.stall ? String(r.probes.stall.acked) : 'n/a',
        staleCell(r.probes['redis restart'], undefined),
        staleCell(r.probes['hub/bus restart'], na(r, 'hub-restart')),
        `${r.flashFirst2s} / ${f1(r.flashSteadyPerSec)}`,
        `${f1(r.surge.reads.p99)} ms`,
        `${f0(r.cpuPerRequest.surge)} µs`,
        `${f1(mean(r.heap) / MB)} MB`,
      ]),
    ),
    '',
    ...results.flatMap((r) =>
      r.crashes.length
        ? [`**${LABEL[r.system]}: ${r.crashes.join('; ')}**; the requests it did not answer count as errors.`, '']
        : [],
    ),
    ...(unconfirmed.length
      ? [
          `**A write through hotkey can resolve without its invalidation**: when the hub cannot be reached the wrapped write still resolves and reports the failure to \`onInvalidateError\` (off by default), and other instances may serve the old value until their lease ends. ${unconfirmed.join('; ')}. A service that must not answer such a write as done checks the callback (as this benchmark's service does to count them).`,
          '',
        ]
      : []),
    ...(violations.length
      ? [
          `**hotkey broke its own rule in this run** (a stale read after a write it confirmed): ${violations.join('; ')}.`,
          '',
        ]
      : []),
    '## Stale reads after an acknowledged write',
    '',
    `![stale reads by system and fault](${CHARTS}/stale.svg)`,
    '',
    table(
      ['system', 'path stalled', ...PROBES, 'writes acked during the stall', 'median write during the stall'],
      results.map((r) => [
        LABEL[r.system],
        PATH_OF[r.system] ? PATH_WORD[PATH_OF[r.system]!] : 'none',
        ...PROBES.map((p) => staleCell(r.probes[p], undefined)),
        r.probes.stall ? String(r.probes.stall.acked) : 'n/a',
        r.probes.stall ? `${f1(median(r.probes.stall.writeMs))} ms` : 'n/a',
      ]),
    ),
    '',
    `Cells: stale of reads (absent: the item was not found at all), and requests that failed. Outages, from the kill to the part answering again: ${results
      .map(
        (r) =>
          `${LABEL[r.system]} Redis ${f0(r.outageMs.redis ?? Number.NaN)} ms${r.outageMs.hubOrBus === undefined ? '' : `, ${PATH_OF[r.system] === 'hub' ? 'hub' : 'bus'} ${f0(r.outageMs.hubOrBus)} ms`}`,
      )
      .join(
        '; ',
      )}. After each restart, the pairs begin ${plan.recoverMs / 1000} s after the part is back; until the first write and read that both succeeded: ${results
      .map(
        (r) =>
          `${LABEL[r.system]} ${recovery(r.probes['after redis restart'])} (Redis)${r.probes['after hub/bus restart'] ? `, ${recovery(r.probes['after hub/bus restart'])} (hub/bus)` : ''}`,
      )
      .join('; ')}.`,
    '',
    '## Through the surge',
    '',
    `![read p99 over time](${CHARTS}/p99.svg)`,
    '',
    `![flash GETs at Redis over time](${CHARTS}/gets.svg)`,
    '',
    table(
      [
        'system',
        'read p50 / p99 before',
        'read p50 / p99 in the surge',
        'flash read p99 in the surge',
        'write p50 / p99 in the surge',
        'errors before / in the surge',
        `flash GETs first ${SURGE_HEAD_MS / 1000} s`,
        'flash GETs/s steady',
        'flash GETs in all',
        'all GETs',
        'Redis CPU in the surge',
        'tracking items',
      ],
      results.map((r) => [
        LABEL[r.system],
        `${f1(r.before.reads.p50)} / ${f1(r.before.reads.p99)} ms`,
        `${f1(r.surge.reads.p50)} / ${f1(r.surge.reads.p99)} ms`,
        `${f1(r.surge.flash.p99)} ms`,
        `${f1(r.surge.writes.p50)} / ${f1(r.surge.writes.p99)} ms`,
        `${r.before.reads.errors + r.before.writes.errors} / ${r.surge.reads.errors + r.surge.writes.errors}${r.surge.skipped ? ` (${r.surge.skipped} not sent)` : ''}`,
        String(r.flashFirst2s),
        f1(r.flashSteadyPerSec),
        String(r.counts.flashGets),
        String(r.counts.gets),
        `${f0(r.redisCpuPerSec)} ms/s`,
        String(r.trackingItems),
      ]),
    ),
    '',
    `GETs are counted at the proxy from the traffic's start to the end of the surge window (${(plan.beforeMs + plan.surgeMs) / 1000} s); "errors" are requests that failed or missed their 3 s deadline, "not sent" the reads the load generator skipped with 3,000 requests unanswered. Redis CPU: redis-server's user + system time over the surge window, per second.`,
    '',
    '## What it costs the service',
    '',
    table(
      [
        'system',
        'CPU per request before the surge',
        'CPU per request in the surge',
        'RSS per instance',
        'heap after GC per instance',
        'local entries per instance',
      ],
      results.map((r) => [
        LABEL[r.system],
        `${f0(r.cpuPerRequest.before)} µs`,
        `${f0(r.cpuPerRequest.surge)} µs`,
        `${f0(mean(r.rss) / MB)} MB`,
        `${f1(mean(r.heap) / MB)} MB`,
        r.entries.some(Number.isFinite) ? f0(mean(r.entries)) : 'not exposed',
      ]),
    ),
    '',
    'CPU per request: the service processes’ CPU time over the window over the requests they answered in it, background work included (a hub link’s reports, a bus, tracking). Heap after full GCs and RSS after the surge, mean over the instances.',
    '',
    '## Where a peer wins',
    '',
    ...(peerWins.length ? peerWins.map((l) => `- ${l}`) : ['- Nowhere in this run.']),
    '',
    'Where hotkey wins:',
    '',
    ...(hotkeyWins.length ? hotkeyWins.map((l) => `- ${l}`) : ['- Nowhere in this run.']),
    '',
    ...(even.length ? ['Even:', '', ...even.map((l) => `- ${l}`), ''] : []),
    '## What each promises, beside what was measured',
    '',
    ...results.flatMap((r) => {
      const c = PROMISES[r.system];
      const probes = PROBES.filter((p) => r.probes[p]).map((p) => `${p} ${r.probes[p]!.stale}/${r.probes[p]!.reads}`);
      return [
        `**${LABEL[r.system]}** — ${c.says} ([${c.source.title}](${c.source.url}))`,
        '',
        `Set up here: ${c.setup} Measured: stale reads ${probes.join(', ')}.`,
        '',
      ];
    }),
    '## Re-run',
    '',
    '```',
    'pnpm bench --only versus            # a few minutes on 2 cores; rewrites this page',
    'pnpm bench --only versus --quick    # smoke run; its page goes to a temporary directory',
    '# one system or fault at a time, the page elsewhere:',
    'node --conditions=@hotkey/source --import tsx test/bench/versus.bench.ts --quick \\',
    '  --systems hotkey-ioredis,bentocache --faults stall,redis-restart,hub-restart --page-dir /tmp/versus',
    '```',
    '',
    `The SDK ran from its build (${run.build}). The small-scale scenario runs in the test suite: test/e2e/versus.test.ts.`,
    '',
  ];
  const page = join(dir, 'comparison.md');
  writeFileSync(page, out.join('\n'));
  return [page, ...written];
}
