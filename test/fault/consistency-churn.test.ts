/**
 * The consistency checker under membership churn: a 3-hub cluster on a real redis-server, three
 * SDK processes (consistency-worker.ts) reading hot keys through `withHotKeys` while two of them
 * write those keys through the wrapper, every value a growing version. The keys are chosen so
 * that every hub owns one and a joining fourth hub takes two over, so each fault moves written
 * hot keys between owners while they are read and written. Faults, one phase each: SIGTERM of a
 * hub and its return, SIGKILL of a hub and its restart, a new hub joining while one reader is
 * slow to reach it (its connections to the new hub held 4 s, longer than the fence: it keeps reading under the old
 * owner's leases while the writers already route to the new owner), that hub leaving, and a
 * rolling restart of all three (SIGTERM, restart on the same port, next once it is a member).
 *
 * The check (consistency-records.ts): no read returns a version older than a wrapper write
 * acknowledged before the read began. The table gives, per phase, reads, stale reads and the
 * write (ack) latency the fault costs, to test/artifacts/consistency-churn.txt.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Ownership } from '@hotkey/sdk/ownership';
import { HubProcess, writeConfig } from '../support/hub-process.ts';
import { freePort, RedisServer } from '../support/redis-server.ts';
import { hostNow } from '../support/host-clock.ts';
import { request } from '../support/http.ts';
import { delay, waitFor } from '../support/wait.ts';
import { fmt, pct, Records, stopWorker, type Worker } from './consistency-records.ts';

const now = hostNow;
/** each phase is short: the file stays around a minute and a half on two busy cores */
const PHASE_MS = Number(process.env.CK_PHASE_MS ?? 2500);
/** how long the slow reader's connections to the joining hub are held */
const SLOW_HELLO_MS = 4000;
const HUBS = ['h1', 'h2', 'h3'];
const JOINER = 'h4';
const config = {
  apps: { ck: { rules: [{ match: 'ckc:*', threshold: 100, windowMs: 1000, hotMs: 60_000, cacheTtlMs: 20_000 }] } },
};

/**
 * Four keys: one owned by each of h1..h3 (a fault of any hub moves one), and two of them taken
 * over by h4 when it joins (the slow reader's case); found by rendezvous hashing like SDKs do.
 */
function pickKeys(): string[] {
  const three = new Ownership(HUBS);
  const four = new Ownership([...HUBS, JOINER]);
  const chosen: string[] = [];
  const moved = (k: string) => four.owner(k) === JOINER;
  for (const hub of HUBS) {
    for (let i = 0; ; i++) {
      const k = `ckc:${hub}:${i}`;
      if (three.owner(k) !== hub) continue;
      // h1's and h2's keys move to h4 on its join; h3's stays
      if (moved(k) !== (hub !== 'h3')) continue;
      chosen.push(k);
      break;
    }
  }
  for (let i = 0; ; i++) {
    const k = `ckc:x:${i}`;
    if (!moved(k) && !chosen.includes(k)) {
      chosen.push(k);
      break;
    }
  }
  return chosen;
}

const records = new Records();
const { reads, writes } = records;
const phases: { name: string; from: number; to: number }[] = [];
const hubs = new Map<string, HubProcess>();
const ports = new Map<string, number>();
let redis: RedisServer | undefined;
let configPath = '';
const workers: Worker[] = [];

async function startHub(id: string): Promise<HubProcess> {
  const port = ports.get(id) ?? (await freePort());
  ports.set(id, port);
  const args = ['--redis', redis!.url, '--node-id', id, '--config', configPath, '--port', String(port)];
  // generous: tsx start-up of a hub beside three busy workers on two cores
  const hub = await HubProcess.start({ args, readyTimeoutMs: 60_000 });
  hubs.set(id, hub);
  return hub;
}

/** Waits until hub `id` lists exactly `members`. */
async function waitMembers(ids: string[], members: string[]): Promise<void> {
  const want = [...members].sort().join(',');
  for (const id of ids)
    await waitFor(
      `${id} to list members ${want}`,
      async () => {
        const { body } = await request<{ members: { id: string }[] }>(`${hubs.get(id)!.httpUrl}/api/cluster`, {}, 3000);
        return (
          body.members
            .map((m) => m.id)
            .sort()
            .join(',') === want
        );
      },
      15_000,
      50,
    );
}

async function phase(name: string, run: () => Promise<void>): Promise<void> {
  const from = now();
  await run();
  phases.push({ name, from, to: now() });
  console.log(
    `  phase ${name}: ${((now() - from) / 1000).toFixed(1)} s, ${reads.length} reads, ${writes.length} writes`,
  );
}

test.after(async () => {
  await Promise.allSettled(workers.map(stopWorker));
  records.killAll();
  await Promise.allSettled([...hubs.values()].map((h) => h.stop('SIGKILL')));
  await redis?.stop();
});

test('no read returns a version older than an acknowledged write while hubs leave, crash, join and restart', async () => {
  const keys = pickKeys();
  redis = await RedisServer.start();
  const seed = new Redis({ port: redis.port, host: '127.0.0.1' });
  for (const k of keys) await seed.set(k, '1');
  seed.disconnect();
  configPath = writeConfig(config, 'hotkey-ck-churn-');
  await Promise.all(HUBS.map(startHub));
  await waitMembers(HUBS, HUBS);
  const urls = HUBS.map((id) => hubs.get(id)!.url);
  const base = { hub: urls, redisPort: redis.port, readKeys: keys, readers: 2, mgetReaders: 0, writeEveryMs: 30 };
  const [w0, w1, w2] = await Promise.all([
    records.startWorker('w0', { ...base, wrapperWrites: [keys[0], keys[2]] }),
    records.startWorker('w1', { ...base, wrapperWrites: [keys[1], keys[3]] }),
    records.startWorker('w2', base),
  ]);
  workers.push(w0!, w1!, w2!);

  await phase('warm-up', () => delay(2500));
  await phase('connected', () => delay(PHASE_MS));
  await phase('SIGTERM h3', async () => {
    await hubs.get('h3')!.stop('SIGTERM');
    await delay(PHASE_MS);
  });
  await phase('h3 rejoins', async () => {
    await startHub('h3');
    await delay(PHASE_MS);
  });
  await phase('SIGKILL h2', async () => {
    await hubs.get('h2')!.stop('SIGKILL');
    await delay(PHASE_MS);
  });
  await phase('h2 restarts', async () => {
    await startHub('h2');
    await delay(PHASE_MS);
  });
  await phase(`${JOINER} joins, w2 slow to reach it`, async () => {
    ports.set(JOINER, await freePort());
    const ready = new Promise<void>((resolve) =>
      w2!.child.on('message', (m: { type: string }) => m.type === 'slow-connect-ready' && resolve()),
    );
    w2!.child.send({ type: 'slow-connect', port: ports.get(JOINER), ms: SLOW_HELLO_MS });
    await ready;
    await startHub(JOINER);
    await delay(SLOW_HELLO_MS + PHASE_MS);
  });
  await phase(`${JOINER} leaves (SIGTERM)`, async () => {
    await hubs.get(JOINER)!.stop('SIGTERM');
    hubs.delete(JOINER);
    await delay(PHASE_MS);
  });
  await phase('rolling restart h1 h2 h3', async () => {
    for (const id of HUBS) {
      await hubs.get(id)!.stop('SIGTERM');
      await startHub(id);
      await waitMembers([id], HUBS);
    }
    await delay(PHASE_MS);
  });
  await Promise.all(workers.map(stopWorker));

  // ---- verdict ----
  const verdicts = new Map(keys.map((k) => [k, records.judge(k)] as const));
  const phaseOf = (t: number) => phases.find((p) => t >= p.from && t < p.to)?.name ?? 'after';
  const report: string[] = [];
  const log = (line: string) => {
    report.push(line);
    console.log(line);
  };
  log(
    `\n  keys ${keys.join(' ')}; ${reads.length} reads, ${writes.length} writes (${writes.filter((w) => w.acked).length} acknowledged)`,
  );
  log('  phase                              reads   stale  writes acked/not  write (ack) ms p50/p99/max');
  for (const p of phases) {
    const inP = (t: number) => t >= p.from && t < p.to;
    const stale = keys.reduce((n, k) => n + verdicts.get(k)!.stale.filter(({ read }) => inP(read.start)).length, 0);
    const ws = writes.filter((w) => inP(w.start));
    const lat = ws
      .filter((w) => w.acked)
      .map((w) => w.end - w.start)
      .sort((a, b) => a - b);
    log(
      `  ${p.name.padEnd(34)} ${String(reads.filter((r) => inP(r.start)).length).padStart(6)}  ${String(stale).padStart(5)}  ${String(lat.length).padStart(6)}/${String(ws.length - lat.length).padEnd(8)} ${fmt(pct(lat, 50))}/${fmt(pct(lat, 99))}/${fmt(lat.at(-1) ?? Number.NaN)}`,
    );
  }
  for (const k of keys)
    for (const { read: r, missed: w } of verdicts.get(k)!.stale.slice(0, 5))
      log(
        `  STALE ${k} v${r.v} read by ${r.proc} at ${phaseOf(r.start)} +${Math.round(r.start - phases[0]!.from)} ms; ` +
          `missed v${w.v} written by ${w.proc}, acked ${(r.start - w.end).toFixed(1)} ms before the read began, ${w.v - r.v} versions behind`,
      );
  const artifacts = fileURLToPath(new URL('../artifacts/', import.meta.url));
  mkdirSync(artifacts, { recursive: true });
  writeFileSync(`${artifacts}consistency-churn.txt`, `${report.join('\n')}\n`);

  for (const k of keys) assert.ok(reads.filter((r) => r.key === k).length > 1000, `${k}: enough reads`);
  for (const p of phases.slice(1))
    assert.ok(
      writes.some((w) => w.acked && w.start >= p.from && w.start < p.to),
      `writes were acknowledged during ${p.name}`,
    );
  for (const k of keys) assert.is(verdicts.get(k)!.stale.length, 0, `stale reads of ${k}`);
});

test.run();
