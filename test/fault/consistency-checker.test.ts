/**
 * A Jepsen-style consistency checker. Three SDK processes (consistency-worker.ts) read hot keys
 * through `withHotKeys` while writers change them: two wrapper writers (one of them behind the
 * frozen link), an update writer of a shared key (`writes: 'update'`: its value is pushed to every
 * instance with the invalidation, and fills are pushed too) and one plain-ioredis writer (an
 * outside write), every value a growing version
 * stored in a real redis-server, through a real hub process. Faults, one phase each: a frozen
 * link (a TCP proxy that stops forwarding, in front of one process's hub connection), hub
 * SIGSTOP/SIGCONT, hub SIGKILL and restart on the same port (writes acked as soon as the new hub
 * may ack, one process reconnecting late), SIGSTOP of a reader process for longer than the lease
 * (sent while it holds a kept first read of a rotating key, below),
 * SIGKILL of a reader process (and a new one), a Redis restart.
 *
 * The check: a read is STALE when it returns a version older than one whose write was
 * acknowledged before the read began (one clock for every process of the host: hostNow).
 * Wrapper and update writes must have 0 stale reads, under every fault. Outside writes are
 * counted and reported, not failed on (Redis tracking bounds them, without an ack). The
 * Lettuce #3481 race — an invalidation between a miss and its fill — is checked on a key read
 * through hk.get with a deliberately slow fill (the value is read, then held 15 ms). Each process
 * also reads every key with one MGET per round (multi-read.ts: hot keys answered locally, the
 * others in one MGET); those reads are judged like the others, and Redis's own MGET count shows
 * that they were answered locally.
 *
 * A node-redis process (consistency-node-redis-worker.ts: a node-redis client wrapped by
 * `@hotkey/sdk/node-redis`, behind the same frozen link as w1) reads every key and writes its own
 * through the wrapper; the ioredis processes read that key too. Its acknowledged writes and its
 * reads are judged like the others: 0 stale after ack either way. Where the adapter is not built,
 * the node-redis roles are skipped and the reason printed.
 *
 * Kept first reads (consistency-rotating.ts): every reader process's wrapped client (both adapters)
 * has Redis track the `ckf:` prefix by broadcast, and reads a new key of it every ROUND_MS: alone
 * first (a cold GET the SDK keeps), then in a burst that surges the key locally, whose load takes
 * that kept reply — unless a write since dropped it. Each round's key is written from the round's
 * start by one process in turn (w0 and w1 and nr through the wrapper, w2 outside the SDK), so that
 * writes land between readers' first reads and their bursts. Those reads are judged like the
 * others, and the table shows per phase how many loads kept replies answered (the workers'
 * `recentReadsUsed`) and how many first read → burst gaps a write landed in.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { HubProcess, writeConfig } from '../support/hub-process.ts';
import { RedisServer } from '../support/redis-server.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';
import { nodeRedisAdapterMissing } from '../support/node-redis-adapter.ts';
import { hostNow } from '../support/host-clock.ts';
import { delay, within } from '../support/wait.ts';
import { fmt, pct, Records, stopWorker, type Worker } from './consistency-records.ts';
import { judgeKeptReads } from './consistency-kept-reads.ts';
import type { RotatingConfig } from './consistency-rotating.ts';

const NODE_REDIS_WORKER = fileURLToPath(new URL('./consistency-node-redis-worker.ts', import.meta.url));
const now = hostNow;
/** fault phases are short: the whole file stays under about a minute on two busy cores */
const PHASE_MS = Number(process.env.CK_PHASE_MS ?? 3000);

const KEY_A = 'ck:a'; // wrapper writes, from worker w0 (direct link)
const KEY_C = 'ck:c'; // wrapper writes, from worker w1 (behind the proxy)
const KEY_B = 'ck:b'; // plain ioredis writes (outside the SDK), from worker w2
const KEY_RACE = 'ck:race'; // wrapper writes from w0; read through hk.get with a slow fill
const KEY_D = 'cks:d'; // a shared key (value push): update writes from w0, pushed values read by all
const KEY_N = 'ck:n'; // node-redis wrapper writes, from worker nr (behind the proxy)
/** the rotating keys: a new one every ROUND_MS, its first reads kept (tracked by broadcast) */
const ROTATING = 'ckf:';
const ROUND_MS = 200;
const config = {
  apps: {
    ck: {
      rules: [
        { match: 'ck:*', threshold: 100, windowMs: 1000, hotMs: 60_000, cacheTtlMs: 20_000 },
        { match: 'cks:*', threshold: 100, windowMs: 1000, hotMs: 60_000, cacheTtlMs: 20_000, push: true },
        // a rotating key is read for one round: promoted ones need not stay hot long
        { match: 'ckf:*', threshold: 100, windowMs: 1000, hotMs: 5000, cacheTtlMs: 20_000 },
      ],
    },
  },
};

const records = new Records();
const { reads, writes, push } = records;
const phases: { name: string; from: number; to: number }[] = [];

function startWorker(id: string, hubUrl: string, redisPort: number, extra: object, file?: string): Promise<Worker> {
  return records.startWorker(
    id,
    {
      hub: hubUrl,
      redisPort,
      readKeys: [KEY_A, KEY_B, KEY_C, KEY_D],
      raceKey: KEY_RACE,
      readers: 2,
      mgetReaders: 1,
      writeEveryMs: 30,
      ...extra,
    },
    file,
  );
}

async function phase(name: string, run: () => Promise<void>): Promise<void> {
  const from = now();
  await run();
  phases.push({ name, from, to: now() });
  console.log(
    `  phase ${name}: ${((now() - from) / 1000).toFixed(1)} s, ${reads.length} reads, ${writes.length} writes so far`,
  );
}

const judge = (key: string, redisLostAt: number) => records.judge(key, redisLostAt);

/**
 * SIGSTOP of `w` while its rotating reader holds a kept first read, before the burst that would
 * surge the key (consistency-rotating.ts `signal-gap`): the stall that a lease must cover.
 */
async function stopInGap(w: Worker): Promise<{ key: string; at: number }> {
  let onGap!: (msg: { type: string; key?: string }) => void;
  const stopped = new Promise<{ key: string; at: number }>((resolve) => {
    onGap = (msg) => {
      if (msg.type !== 'gap') return;
      w.child.kill('SIGSTOP'); // at once: the gap is short
      resolve({ key: msg.key!, at: now() });
    };
  });
  w.child.on('message', onGap);
  w.child.send({ type: 'signal-gap' });
  try {
    return await within(`${w.id} between a first read and its burst`, stopped, 10_000);
  } finally {
    w.child.off('message', onGap);
  }
}

let redis: RedisServer | undefined;
let hub: HubProcess | undefined;
let proxy: TcpProxy | undefined;
const workers: Worker[] = [];

test.after(async () => {
  await Promise.allSettled(workers.map(stopWorker));
  records.killAll();
  if (hub) {
    hub.child.kill('SIGCONT');
    await hub.stop('SIGKILL').catch(() => {});
  }
  await proxy?.close();
  await redis?.stop();
});

test('no read returns a version older than an acknowledged wrapper write, under every fault', async () => {
  const nodeRedisMissing = await nodeRedisAdapterMissing();
  if (nodeRedisMissing) console.log(`  node-redis roles SKIPPED: ${nodeRedisMissing}`);
  const nodeRedis = nodeRedisMissing === undefined;
  // with the node-redis roles, every process reads the node-redis writer's key too
  const readKeys = nodeRedis ? [KEY_A, KEY_B, KEY_C, KEY_D, KEY_N] : [KEY_A, KEY_B, KEY_C, KEY_D];
  // each round's key has one writer (its versions grow in the order Redis applies them): w0, w1, nr, w2
  const writers = nodeRedis ? 4 : 3;
  const rotating = (writeSlot: number): { rotating: RotatingConfig } => ({
    rotating: { prefix: ROTATING, roundMs: ROUND_MS, writeSlot, writers },
  });
  redis = await RedisServer.start();
  const seed = new Redis({ port: redis.port, host: '127.0.0.1' });
  for (const k of [KEY_A, KEY_B, KEY_C, KEY_D, KEY_RACE, KEY_N]) await seed.set(k, '1');
  seed.disconnect();
  const configPath = writeConfig(config, 'hotkey-ck-');
  hub = await HubProcess.start({ args: ['--config', configPath] });
  const hubPort = hub.port;
  proxy = await TcpProxy.start(hubPort);
  const direct = `ws://127.0.0.1:${hubPort}/ws`;
  const proxied = `ws://127.0.0.1:${proxy.port}/ws`;
  const [w0, w1, w2, nr] = await Promise.all([
    startWorker('w0', direct, redis.port, {
      readKeys,
      wrapperWrites: [KEY_A, KEY_RACE],
      updateWrites: [KEY_D],
      ...rotating(0),
    }),
    startWorker('w1', proxied, redis.port, { readKeys, wrapperWrites: [KEY_C], ...rotating(1) }),
    startWorker('w2', direct, redis.port, { readKeys, plainWrites: KEY_B, ...rotating(writers - 1) }),
    nodeRedis
      ? startWorker('nr', proxied, redis.port, { readKeys, wrapperWrites: [KEY_N], ...rotating(2) }, NODE_REDIS_WORKER)
      : undefined,
  ]);
  workers.push(w0!, w1!, w2!);
  if (nr) workers.push(nr);
  let redisLostAt = Infinity;
  let stall: { key: string; at: number } | undefined;

  await phase('warm-up', () => delay(2000));
  const probe = new Redis({ port: redis.port, host: '127.0.0.1' });
  const mgetCalls = async () => Number(/^cmdstat_mget:calls=(\d+)/m.exec(await probe.info('commandstats'))?.[1] ?? 0);
  const mgetsBefore = await mgetCalls();
  await phase('connected', () => delay(PHASE_MS));
  const mgetsSent = (await mgetCalls()) - mgetsBefore;
  probe.disconnect();
  await phase('frozen link (w1)', async () => {
    proxy!.freeze();
    await delay(PHASE_MS);
    proxy!.thaw();
    await delay(1000);
  });
  await phase('hub SIGSTOP', async () => {
    hub!.child.kill('SIGSTOP');
    await delay(PHASE_MS);
    hub!.child.kill('SIGCONT');
    await delay(1000);
  });
  await phase('hub SIGKILL + restart', async () => {
    proxy!.freeze(); // w1 reconnects only well after the new hub is up
    await hub!.stop('SIGKILL');
    await delay(1000);
    hub = await HubProcess.start({ args: ['--config', configPath, '--port', String(hubPort)] });
    await delay(1500);
    proxy!.thaw();
    await delay(PHASE_MS);
  });
  await phase('reader SIGSTOP (w2)', async () => {
    stall = await stopInGap(w2!);
    await delay(PHASE_MS);
    w2!.child.kill('SIGCONT');
    await delay(1000);
  });
  await phase('reader SIGKILL (w2) + new reader', async () => {
    w2!.child.kill('SIGKILL');
    await w2!.exited;
    const w3 = await startWorker('w3', direct, redis!.port, { readKeys, plainWrites: KEY_B, ...rotating(writers - 1) });
    workers.push(w3);
    await delay(PHASE_MS);
  });
  await phase('Redis restart', async () => {
    redisLostAt = now();
    await redis!.restart();
    await delay(PHASE_MS);
  });
  await Promise.all(workers.map(stopWorker));

  // ---- verdict ----
  const wrapperKeys = nodeRedis ? [KEY_A, KEY_C, KEY_D, KEY_N] : [KEY_A, KEY_C, KEY_D];
  const judged = [...wrapperKeys, KEY_B, KEY_RACE];
  const verdicts = new Map(judged.map((k) => [k, judge(k, redisLostAt)] as const));
  const phaseOf = (t: number) => phases.find((p) => t >= p.from && t < p.to)?.name ?? 'after';
  const report: string[] = [];
  const log = (line: string) => {
    report.push(line);
    console.log(line);
  };
  log(`\n  ${reads.length} reads, ${writes.length} writes (${writes.filter((w) => w.acked).length} acknowledged)`);
  log(
    `  value push (${KEY_D}): ${push.updatesSent} updates sent, ${push.updatesInjected} injected, ${push.valuesInjected} pushed fills injected`,
  );
  log(
    '  phase                              reads   stale(wrapper) stale(race) stale(outside)  write ms p50/p99 (wrapper, w0)  staleness ms p50/p99/max wrapper | outside',
  );
  for (const p of phases) {
    const inP = (t: number) => t >= p.from && t < p.to;
    const staleOf = (k: string) => verdicts.get(k)!.stale.filter(({ read }) => inP(read.start)).length;
    const lat = writes
      .filter((w) => w.kind === 'wrapper' && w.proc === 'w0' && w.key === KEY_A && w.acked && inP(w.start))
      .map((w) => w.end - w.start)
      .sort((a, b) => a - b);
    const stalenessOf = (keys: string[]) =>
      keys
        .flatMap((k) => [...verdicts.get(k)!.staleness].filter(([w]) => inP(w.start) && w.acked).map(([, ms]) => ms))
        .sort((a, b) => a - b);
    const sw = stalenessOf(wrapperKeys);
    const so = stalenessOf([KEY_B]);
    log(
      `  ${p.name.padEnd(34)} ${String(reads.filter((r) => inP(r.start)).length).padStart(6)}   ${String(wrapperKeys.reduce((n, k) => n + staleOf(k), 0)).padStart(6)}        ${String(staleOf(KEY_RACE)).padStart(5)}      ${String(staleOf(KEY_B)).padStart(6)}         ${fmt(pct(lat, 50))}/${fmt(pct(lat, 99))} (n=${lat.length})`.padEnd(
        150,
      ) +
        `${fmt(pct(sw, 50))}/${fmt(pct(sw, 99))}/${fmt(sw.at(-1) ?? Number.NaN)} | ${fmt(pct(so, 50))}/${fmt(pct(so, 99))}/${fmt(so.at(-1) ?? Number.NaN)}`,
    );
  }
  for (const k of [...wrapperKeys, KEY_RACE]) {
    for (const { read: r, missed: w } of verdicts.get(k)!.stale.slice(0, 5))
      log(
        `  STALE ${k} v${r.v} read by ${r.proc} at ${phaseOf(r.start)} +${Math.round(r.start - phases[0]!.from)} ms ` +
          `(took ${(r.end - r.start).toFixed(1)} ms); missed v${w.v} written by ${w.proc}, ` +
          `acked ${(r.start - w.end).toFixed(1)} ms before the read began, ${w.v - r.v} versions behind`,
      );
  }
  const connected = phases.find((p) => p.name === 'connected')!;
  const isMget = (via: string) => via === 'mget' || via === 'nr-mget';
  const mgetReads = reads.filter((r) => isMget(r.via));
  // one MGET records a read of each of its keys
  const mgetsRead = mgetReads.filter(
    (r) => r.key === KEY_A && r.start >= connected.from && r.start < connected.to,
  ).length;
  const staleMgetOf = (k: string) => verdicts.get(k)!.stale.filter(({ read }) => isMget(read.via)).length;
  const staleMget = wrapperKeys.map(staleMgetOf);
  log(
    `  MGET readers: ${mgetReads.length} key reads; stale ${staleMget.reduce((a, b) => a + b, 0)} (wrapper keys), ${staleMgetOf(KEY_B)} (outside writes); ` +
      `phase connected: ${mgetsRead} MGETs, ${mgetsSent} reached Redis`,
  );
  const nrReads = reads.filter((r) => r.proc === 'nr');
  const staleOfProc = (proc: string) =>
    wrapperKeys.reduce((n, k) => n + verdicts.get(k)!.stale.filter(({ read }) => read.proc === proc).length, 0);
  if (nodeRedis)
    log(
      `  node-redis (nr): ${nrReads.length} reads (${nrReads.filter((r) => r.via === 'nr-mget').length} by MGET), stale ${staleOfProc('nr')} (wrapper keys); ` +
        `${writes.filter((w) => w.key === KEY_N && w.acked).length} acked writes of ${KEY_N}, read ${reads.filter((r) => r.key === KEY_N && r.proc !== 'nr').length} times by the ioredis processes: stale ${verdicts.get(KEY_N)!.stale.length}`,
    );
  else log(`  node-redis roles skipped: ${nodeRedisMissing}`);
  const kept = judgeKeptReads(records, ROTATING, redisLostAt);
  const inPhase = (p: { from: number; to: number }) => (t: number) => t >= p.from && t < p.to;
  const keptLoadsOf = (nr: boolean, inP: (t: number) => boolean = () => true) =>
    records.keptLoads.filter((u) => (u.proc === 'nr') === nr && inP(u.t)).reduce((n, u) => n + u.n, 0);
  const rotatingReads = reads.filter((r) => r.key.startsWith(ROTATING));
  log(
    `\n  kept first reads (${ROTATING}<round>, a new key every ${ROUND_MS} ms): ${kept.kinds.size} keys, ${rotatingReads.length} reads; ` +
      `loads answered by a kept reply: ${keptLoadsOf(false)} ioredis, ${keptLoadsOf(true)} node-redis`,
  );
  log(
    '  phase                              reads  first reads  kept-reply loads io | nr   acked write in first read→burst gap wrapper | outside   stale(wrapper) stale(outside)',
  );
  for (const p of phases) {
    const inP = inPhase(p);
    const raced = kept.raced.filter((x) => inP(x.burstStart));
    const racedBy = (kind: string) => raced.filter((x) => x.write.kind === kind).length;
    log(
      `  ${p.name.padEnd(34)} ${String(rotatingReads.filter((r) => inP(r.start)).length).padStart(6)}   ${String(rotatingReads.filter((r) => r.via === 'ckf-first' && inP(r.start)).length).padStart(6)}` +
        `       ${String(keptLoadsOf(false, inP)).padStart(6)} | ${String(keptLoadsOf(true, inP)).padEnd(6)}` +
        `                ${String(racedBy('wrapper')).padStart(6)} | ${String(racedBy('plain')).padEnd(6)}` +
        `             ${String(kept.stale.filter(({ read }) => inP(read.start)).length).padStart(6)}         ${String(kept.staleOutside.filter(({ read }) => inP(read.start)).length).padStart(6)}`,
    );
  }
  if (stall !== undefined) {
    const { reads: stalledReads, writes: stalledWrites } = records.of(stall.key);
    const first = stalledReads.find((r) => r.proc === 'w2' && r.via === 'ckf-first');
    const burst = stalledReads.filter((r) => r.proc === 'w2' && r.via === 'ckf-burst');
    const burstStart = Math.min(...burst.map((r) => r.start));
    const ackedInStall = stalledWrites.filter((w) => w.acked && w.end > stall!.at && w.end < burstStart);
    log(
      `  w2 stopped ${first === undefined ? '?' : fmt(stall.at - first.end)} ms after its first read of ${stall.key} (v${first?.v ?? '?'}) was answered, ` +
        `for ${fmt(burstStart - stall.at)} ms; ${ackedInStall.length} writes of it acked meanwhile (newest v${ackedInStall.at(-1)?.v ?? '—'}); ` +
        `its burst read v${burst.map((r) => r.v).sort((a, b) => a - b)[0] ?? '—'} at the oldest`,
    );
  }
  const staleKeys = (stale: typeof kept.stale) => new Set(stale.map(({ read }) => `${read.proc} ${read.key}`)).size;
  log(
    `  rotating keys: ${kept.stale.length} stale reads after wrapper writes (${staleKeys(kept.stale)} reader × key), ` +
      `${kept.staleOutside.length} after outside writes (${staleKeys(kept.staleOutside)} reader × key)`,
  );
  for (const { read: r, missed: w } of kept.stale.slice(0, 5))
    log(
      `  STALE ${r.key} v${r.v} read by ${r.proc} (${r.via}) at ${phaseOf(r.start)}; missed v${w.v} written by ${w.proc}, ` +
        `acked ${(r.start - w.end).toFixed(1)} ms before the read began`,
    );
  // the figures outlive the run (the runner shows a passing file's output only on failure)
  const artifacts = fileURLToPath(new URL('../artifacts/', import.meta.url));
  mkdirSync(artifacts, { recursive: true });
  writeFileSync(`${artifacts}consistency-checker.txt`, `${report.join('\n')}\n`);
  const readsOf = (k: string) => records.of(k).reads.length;
  for (const k of judged) assert.ok(readsOf(k) > 1000, `${k}: only ${readsOf(k)} reads`);
  assert.ok(writes.filter((w) => w.key === KEY_A && w.acked).length > 50, 'wrapper writes were acknowledged');
  for (const k of wrapperKeys) assert.is(verdicts.get(k)!.stale.length, 0, `stale reads of ${k} (wrapper writes)`);
  assert.ok(writes.filter((w) => w.key === KEY_D && w.acked).length > 50, 'update writes were acknowledged');
  assert.ok(push.updatesInjected > 0, 'update writes pushed their values to other instances');
  assert.is(verdicts.get(KEY_RACE)!.stale.length, 0, 'stale reads of the slow-fill key (Lettuce #3481 race)');
  assert.ok(mgetReads.length > 4000, `MGET readers: only ${mgetReads.length} key reads`);
  assert.equal(
    staleMget,
    wrapperKeys.map(() => 0),
    'stale MGET reads of wrapper keys',
  );
  if (nodeRedis) {
    assert.ok(nrReads.length > 1000, `node-redis reads: only ${nrReads.length}`);
    assert.ok(
      nrReads.some((r) => r.via === 'nr-mget'),
      'node-redis MGET reads were recorded',
    );
    assert.ok(
      writes.filter((w) => w.key === KEY_N && w.acked).length > 50,
      'node-redis wrapper writes were acknowledged',
    );
  }
  assert.ok(kept.kinds.size > 50, `rotating keys: only ${kept.kinds.size}`);
  assert.ok(keptLoadsOf(false) > 0, 'ioredis: loads answered by a kept first read');
  if (nodeRedis) assert.ok(keptLoadsOf(true) > 0, 'node-redis: loads answered by a kept first read');
  assert.ok(
    kept.raced.some((x) => x.write.kind === 'wrapper'),
    'acked wrapper writes landed between first reads and their bursts',
  );
  assert.is(kept.stale.length, 0, `stale reads of rotating keys (wrapper writes, kept first reads)`);
  assert.ok(mgetsSent * 2 < mgetsRead, `MGETs answered locally: ${mgetsSent} of ${mgetsRead} reached Redis`);
});

test.run();
