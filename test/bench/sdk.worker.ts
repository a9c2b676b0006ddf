/**
 * A process hosting many SDK instances (real HotKeyClients, or naive clients) for the latency and
 * fan-out benchmarks. It records, per key, the wall-clock time each instance learned the key is
 * hot (hostNow: one clock for every process on the host).
 *
 *   <- { type: 'connect', url, count, kind: 'sdk' | 'naive', flushIntervalMs? }  -> { type: 'connected' }
 *   <- { type: 'surge', key, rate, startAt, durationMs }  every instance tracks `key` at `rate`/s from
 *      `startAt` (host ms, hostNow) until it sees the key hot or `durationMs` passes
 *   <- { type: 'collect', key, deadlineMs }  -> { type: 'promoted', key, times, missing }
 */
import { HotKeyClient } from '@hotkey/sdk';
import { NaiveClient } from './baseline/naive-client.ts';
import { fromParent, toParent } from './harness.ts';
import { waitFor } from '../support/wait.ts';
import { hostNow } from '../support/host-clock.ts';

interface Instance {
  track(key: string): void;
  close(): Promise<void>;
}

const wallNow = hostNow;
/** key -> receipt time per instance index */
const seen = new Map<string, Map<number, number>>();
function mark(key: string, index: number): void {
  let m = seen.get(key);
  if (!m) seen.set(key, (m = new Map()));
  if (!m.has(index)) m.set(index, wallNow());
}

const connect = await fromParent<{ url: string; count: number; kind: 'sdk' | 'naive'; flushIntervalMs?: number }>(
  'connect',
  60_000,
);
const instances: Instance[] = [];
const BATCH = 50; // connect in batches: a thundering herd of handshakes measures nothing useful
for (let start = 0; start < connect.count; start += BATCH) {
  const batch = await Promise.all(
    Array.from({ length: Math.min(BATCH, connect.count - start) }, async (_, j): Promise<Instance> => {
      const index = start + j;
      const instanceId = `bench-${process.pid}-${index}`;
      if (connect.kind === 'naive') {
        return NaiveClient.connect(
          {
            url: connect.url,
            app: 'bench',
            instance: instanceId,
            intervalMs: 500,
            onPromote: (key) => mark(key, index),
          },
          20_000,
        );
      }
      const client = new HotKeyClient({
        app: 'bench',
        hubs: connect.url,
        instanceId,
        flushIntervalMs: connect.flushIntervalMs ?? 100,
      });
      client.on('promote', (key) => mark(key, index));
      client.on('error', () => undefined);
      await client.ready({ signal: AbortSignal.timeout(30_000) });
      return client;
    }),
  );
  instances.push(...batch);
}
toParent({ type: 'connected' });

process.on('message', (raw) => {
  const m = raw as { type: string; key: string; rate: number; startAt: number; durationMs: number; deadlineMs: number };
  if (m.type === 'surge') surge(m.key, m.rate, m.startAt, m.durationMs);
  else if (m.type === 'collect') void collect(m.key, m.deadlineMs);
});
process.on('disconnect', () => process.exit(0));

/** One timer for all instances: accesses accrue at `rate` per instance, fractional credit carried. */
function surge(key: string, rate: number, startAt: number, durationMs: number): void {
  const TICK_MS = 5;
  let credit = 0;
  let last = startAt;
  const step = () => {
    const now = wallNow();
    if (now < startAt) {
      setTimeout(step, Math.max(0, Math.min(TICK_MS, startAt - now)));
      return;
    }
    credit += ((now - last) * rate) / 1000;
    last = now;
    const whole = Math.floor(credit);
    credit -= whole;
    // callers keep reading the key after it turned hot somewhere: every instance keeps counting
    for (let i = 0; i < instances.length; i++) for (let k = 0; k < whole; k++) instances[i]!.track(key);
    const allHot = (seen.get(key)?.size ?? 0) >= instances.length;
    if (!allHot && now - startAt < durationMs) setTimeout(step, TICK_MS);
  };
  step();
}

async function collect(key: string, deadlineMs: number): Promise<void> {
  // past the deadline, report who did see it: the parent counts the missing ones
  await waitFor(
    `every instance to see ${key} hot`,
    () => (seen.get(key)?.size ?? 0) >= instances.length,
    deadlineMs,
  ).catch(() => undefined);
  const times = [...(seen.get(key)?.values() ?? [])];
  toParent({ type: 'promoted', key, times, missing: instances.length - times.length });
}
