/**
 * The flood attacks of floods.test.ts (report floods, invalidation floods, eviction floods) as a measurement:
 * legit SDKs probe promotion latency before and during an attack by flood-attacker.ts (its own
 * process) on a real hub process, while /healthz latency, the hub's RSS, its counters and the
 * legit clients' hot sets are watched. floods.test.ts asserts on the figures; floods-measure.ts
 * prints them for any hub checkout (`--hub-bin`), to compare before and after.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { HotKeyClient } from '@hotkey/sdk';
import { type HubProcess, writeConfig } from '../support/hub-process.ts';
import { scrapeMetrics } from '../support/http.ts';
import { drive } from '../support/traffic.ts';
import { delay, waitFor, within } from '../support/wait.ts';

export type AttackMode = 'promote' | 'invalidate' | 'frames' | 'evict' | 'evict-many';

const evicting = (mode: AttackMode) => mode === 'evict' || mode === 'evict-many';

/** where the many-connection eviction flood comes from: loopback, but not the legit SDKs' address */
export const FLOOD_ADDRESS = '127.0.0.2';
/** connections of the many-connection eviction flood */
export const FLOOD_MANY_CONNECTIONS = 16;
/**
 * 'evict-many': distinct keys each legit instance keeps reporting (its long tail), more than an
 * eighteenth of the 20,000-key table, so that a per-connection share alone would leave them
 * exposed to FLOOD_MANY_CONNECTIONS flooding connections
 */
const BACKGROUND_KEYS = 1500;

export const FLOOD_THRESHOLD = 200;
export const FLOOD_APP = 'shop';
/** one rule for every key: the attack's junk and the probes' keys alike */
export const floodConfig = {
  apps: { [FLOOD_APP]: { rules: [{ match: '*', threshold: FLOOD_THRESHOLD, hotMs: 30_000, cacheTtlMs: 5000 }] } },
};

/**
 * The hub config for `mode`. 'evict' and 'evict-many' count over a 10 s window, so that the flood's keys hold
 * their counts while the table turns over and an eviction must choose between non-empty keys.
 */
export function floodConfigFor(mode: AttackMode) {
  if (!evicting(mode)) return floodConfig;
  const rule = { match: '*', threshold: FLOOD_THRESHOLD, windowMs: 10_000, hotMs: 30_000, cacheTtlMs: 5000 };
  return { apps: { [FLOOD_APP]: { rules: [rule] } } };
}

/**
 * Hub flags for `mode`. 'evict' and 'evict-many' run a 20,000-key table: the flood turns it over several times
 * in a few seconds at the rate a shared 2-core box ingests (a fast hub under a faster flood does
 * the same to the default 100,000).
 */
export function floodHubArgs(mode: AttackMode): string[] {
  const args = ['--config', writeConfig(floodConfigFor(mode), 'hotkey-floods-')];
  return evicting(mode) ? [...args, '--max-keys-per-app', '20000'] : args;
}

const ATTACKER = fileURLToPath(new URL('./flood-attacker.ts', import.meta.url));

export interface LatencyFigures {
  probes: number;
  p50: number;
  p95: number;
  /** probes not promoted within their deadline */
  lost: number;
}

export interface AttackFigures {
  mode: AttackMode;
  baseline: LatencyFigures;
  attack: LatencyFigures;
  healthzWorstMs: number;
  /** /healthz requests that failed or took over 5 s */
  healthzFailed: number;
  rssBeforeMb: number;
  rssPeakMb: number;
  /** hub counters over the attack */
  recordsIngested: number;
  recordsDropped: number;
  promotions: number;
  invalidations: number;
  /** the protections' /metrics counters over the attack */
  protection: {
    soloRefused: number;
    invalidationsDelayed: number;
    intakeQueued: number;
    intakePaused: number;
    keysEvicted: number;
    /** new keys of a session at its share of a full key table that found none of its own to replace */
    keysRefused: number;
    /** keys evicted from sessions at or over their share of the key table */
    keysEvictedOverShare: number;
  };
  /** most hot keys a legit client held during the attack (junk included) */
  legitHotKeysMax: number;
  /** samples (every 100 ms) in which the long-running real hot key was not hot on some legit client */
  realKeyMissing: number;
  /** legit invalidate() calls during the attack: ok / failed, and the slowest */
  legitInvalidations: { ok: number; failed: number; worstMs: number };
  attacker: Record<string, unknown>;
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function figures(samples: number[]): LatencyFigures {
  const ok = samples.filter(Number.isFinite).sort((a, b) => a - b);
  return {
    probes: samples.length,
    p50: Math.round(quantile(ok, 0.5)),
    p95: Math.round(quantile(ok, 0.95)),
    lost: samples.length - ok.length,
  };
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}

async function metrics(hub: HubProcess): Promise<Record<string, number>> {
  // a hub that cannot answer in 10 s: the deltas read as NaN
  return scrapeMetrics(hub.httpUrl).catch(() => ({}));
}

/** ms from the first read of a fresh key (at `rate` reads / s over `clients`) until every client holds it hot. */
async function probe(clients: HotKeyClient[], key: string, deadlineMs: number, rate: number): Promise<number> {
  const t0 = performance.now();
  const driver = drive(clients, key, rate);
  try {
    await waitFor(`${key} hot on every legit client`, () => clients.every((hk) => hk.isHot(key)), deadlineMs, 5);
    return performance.now() - t0;
  } catch {
    return Number.POSITIVE_INFINITY;
  } finally {
    driver.stop();
  }
}

async function probes(
  clients: HotKeyClient[],
  tag: string,
  count: number,
  untilMs: number,
  rate: number,
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count && performance.now() < untilMs; i++) {
    out.push(await probe(clients, `legit:${tag}:${i}`, 4000, rate));
    await delay(100);
  }
  return out;
}

/**
 * Each client keeps reporting BACKGROUND_KEYS keys of its own, every one at twice the local
 * threshold the hub gives two instances (40 accesses a 10 s window against 20): candidates that
 * never turn hot.
 */
function background(clients: HotKeyClient[]): { stop(): void } {
  const perKeyPerSecond = 4;
  const tickMs = 50;
  let at = 0;
  const timer = setInterval(() => {
    const n = Math.ceil((BACKGROUND_KEYS * perKeyPerSecond * tickMs) / 1000);
    for (let i = 0; i < n; i++, at++) clients.forEach((hk, c) => hk.track(`bg:${c}:${at % BACKGROUND_KEYS}`));
  }, tickMs);
  return { stop: () => clearInterval(timer) };
}

function startAttacker(mode: AttackMode, hub: HubProcess, seconds: number, connections: number) {
  const spec = {
    mode,
    url: hub.url,
    app: FLOOD_APP,
    seconds,
    connections,
    threshold: FLOOD_THRESHOLD,
    ...(mode === 'evict-many' ? { localAddress: FLOOD_ADDRESS } : {}),
  };
  const child = spawn(process.execPath, [...process.execArgv, ATTACKER, JSON.stringify(spec)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('ATTACK_READY')) resolve();
    });
    child.once('exit', () => reject(new Error(`attacker exited before it was ready: ${err}`)));
  });
  const done = new Promise<Record<string, unknown>>((resolve) => {
    child.once('exit', () => {
      const m = /ATTACK_DONE (\{.*\})/.exec(out);
      resolve(m ? (JSON.parse(m[1]!) as Record<string, unknown>) : { error: err.slice(0, 500) });
    });
  });
  return { child, ready: within('the attacker to connect', ready, 15_000), done };
}

/**
 * Baseline probes, then `mode`'s attack for `attackSeconds` with probes during it (after 1 s),
 * everything watched. Two legit SDK instances, so legit keys have two reporters as in any real
 * deployment of more than one instance.
 */
export async function measureAttack(
  hub: HubProcess,
  mode: AttackMode,
  options: {
    attackSeconds?: number;
    connections?: number;
    baselineProbes?: number;
    /**
     * reads / s of each probe key @default 10 × threshold (crosses in ~0.1 s); evictions: 1.5 ×
     * (~0.7 s), as a key gathering its counts longer is what an eviction flood threatens
     */
    probeRate?: number;
  } = {},
): Promise<AttackFigures> {
  const attackSeconds = options.attackSeconds ?? 6;
  const probeRate = options.probeRate ?? FLOOD_THRESHOLD * (evicting(mode) ? 1.5 : 10);
  const opts = { app: FLOOD_APP, hubs: [hub.url], reconnectMaxMs: 300 };
  const clients = [
    new HotKeyClient({ ...opts, instanceId: `legit-a-${mode}` }),
    new HotKeyClient({ ...opts, instanceId: `legit-b-${mode}` }),
  ];
  const pid = hub.child.pid!;
  const watchers: NodeJS.Timeout[] = [];
  try {
    await Promise.all(clients.map((hk) => hk.ready({ signal: AbortSignal.timeout(10_000) })));
    // a real hot key, kept hot all along: the attack must not evict it from legit hot sets
    const realKey = `real:${mode}`;
    const realDriver = drive(clients, realKey, FLOOD_THRESHOLD * 3);
    const backgroundDriver = mode === 'evict-many' ? background(clients) : undefined;
    await waitFor(`${realKey} hot`, () => clients.every((hk) => hk.isHot(realKey)), 5000);
    const baseline = await probes(
      clients,
      `${mode}:base`,
      options.baselineProbes ?? 6,
      performance.now() + 8000,
      probeRate,
    );

    const rssBeforeMb = rssMb(pid);
    const before = await metrics(hub);
    let rssPeakMb = rssBeforeMb;
    let legitHotKeysMax = 0;
    let realKeyMissing = 0;
    watchers.push(
      setInterval(() => {
        rssPeakMb = Math.max(rssPeakMb, rssMb(pid));
        for (const hk of clients) legitHotKeysMax = Math.max(legitHotKeysMax, hk.stats().hotKeys);
        if (!clients.every((hk) => hk.isHot(realKey))) realKeyMissing++;
      }, 100),
    );
    let healthzWorstMs = 0;
    let healthzFailed = 0;
    let watching = true;
    const healthz = (async () => {
      while (watching) {
        const t0 = performance.now();
        try {
          const res = await fetch(`${hub.httpUrl}/healthz`, { signal: AbortSignal.timeout(5000) });
          await res.text();
          if (!res.ok) healthzFailed++;
        } catch {
          healthzFailed++;
        }
        healthzWorstMs = Math.max(healthzWorstMs, performance.now() - t0);
        await delay(100);
      }
    })();
    const legitInvalidations = { ok: 0, failed: 0, worstMs: 0 };
    let invalidating = mode === 'invalidate';
    const invalidator = (async () => {
      let i = 0;
      while (invalidating) {
        const t0 = performance.now();
        try {
          await clients[0]!.invalidate(`legit-write:${i++}`);
          legitInvalidations.ok++;
        } catch {
          legitInvalidations.failed++;
        }
        legitInvalidations.worstMs = Math.max(legitInvalidations.worstMs, Math.round(performance.now() - t0));
        await delay(100);
      }
    })();

    const attacker = startAttacker(
      mode,
      hub,
      attackSeconds,
      options.connections ?? (mode === 'evict-many' ? FLOOD_MANY_CONNECTIONS : 48),
    );
    await attacker.ready;
    const attackEnds = performance.now() + attackSeconds * 1000;
    await delay(1000);
    const during = await probes(clients, `${mode}:attack`, 50, attackEnds - 500, probeRate);
    invalidating = false;
    const attackerStats = await within('the attacker to finish', attacker.done, attackSeconds * 1000 + 10_000);
    await delay(500);
    watching = false;
    await within('the /healthz watcher', healthz, 6000);
    await within('the legit invalidations', invalidator, 6000);
    realDriver.stop();
    backgroundDriver?.stop();
    const after = await metrics(hub);
    const delta = (name: string) => (after[name] ?? Number.NaN) - (before[name] ?? Number.NaN);
    return {
      mode,
      baseline: figures(baseline),
      attack: figures(during),
      healthzWorstMs: Math.round(healthzWorstMs),
      healthzFailed,
      rssBeforeMb,
      rssPeakMb,
      recordsIngested: delta('hotkey_records_ingested_total'),
      recordsDropped: delta('hotkey_records_dropped_total'),
      promotions: delta('hotkey_promotions_total'),
      invalidations: delta('hotkey_invalidations_total'),
      protection: {
        soloRefused: delta('hotkey_promotions_solo_refused_total'),
        invalidationsDelayed: delta('hotkey_invalidations_delayed_total'),
        intakeQueued: delta('hotkey_intake_queued_total'),
        intakePaused: delta('hotkey_intake_paused_total'),
        keysEvicted: delta('hotkey_keys_evicted_total'),
        keysRefused: delta('hotkey_keys_refused_total'),
        keysEvictedOverShare: delta('hotkey_keys_evicted_over_share_total'),
      },
      legitHotKeysMax,
      realKeyMissing,
      legitInvalidations,
      attacker: attackerStats,
    };
  } finally {
    for (const w of watchers) clearInterval(w);
    await Promise.all(clients.map((hk) => hk.close()));
  }
}
