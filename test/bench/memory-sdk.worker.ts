/**
 * One SDK instance under a cardinality flood, in its own process (run with --expose-gc): tracks
 * `rate` never-seen keys per second for `durationMs`, plus a planted key at `plantedRate`, and
 * reports heap growth (after full GCs), the peak heap, the rate it reached and whether the
 * planted key was promoted and is still hot at the end.
 *
 *   argv: kind ('sdk' | 'naive'), url, rate, durationMs, plantedRate
 *   -> { type: 'memory', heapBefore, heapAfter, heapPeak, achievedRate, plantedPromoted, plantedHot }
 */
import { HotKeyClient } from '@hotkey/sdk';
import { NaiveClient } from './baseline/naive-client.ts';
import { toParent } from './harness.ts';
import { waitFor } from '../support/wait.ts';

const [kind, url, rateArg, durationArg, plantedArg] = process.argv.slice(2);
const rate = Number(rateArg);
const durationMs = Number(durationArg);
const plantedRate = Number(plantedArg);
const PLANTED = 'planted:hot';
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

let plantedPromoted = false;
let client: { track(key: string): void; isHot(key: string): boolean; close(): Promise<void> };
if (kind === 'naive') {
  client = await NaiveClient.connect({
    url: url!,
    app: 'bench',
    instance: 'memory',
    onPromote: (key) => key === PLANTED && (plantedPromoted = true),
  });
} else {
  const c = new HotKeyClient({ app: 'bench', hubs: url!, instanceId: 'memory' });
  c.on('promote', (key) => key === PLANTED && (plantedPromoted = true));
  c.on('error', () => undefined);
  await c.ready({ signal: AbortSignal.timeout(10_000) });
  client = c;
}
gc();
gc();
const heapBefore = process.memoryUsage().heapUsed;
let heapPeak = heapBefore;
const sampler = setInterval(() => (heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed)), 50);

let sent = 0;
let planted = 0;
const started = performance.now();
await new Promise<void>((resolve) => {
  // work in 5 ms slices so the client's own timers (flush, pings) keep running
  const slice = () => {
    const sliceEnd = performance.now() + 5;
    for (;;) {
      const now = performance.now();
      const elapsed = now - started;
      if (elapsed >= durationMs) return resolve();
      if (now >= sliceEnd) break;
      const due = (elapsed * rate) / 1000;
      for (let i = 0; sent < due && i < 256; i++) client.track(`flood:${sent++}`);
      while (planted < (elapsed * plantedRate) / 1000) {
        client.track(PLANTED);
        planted++;
      }
      if (sent >= due) break;
    }
    setImmediate(slice);
  };
  slice();
});
const achievedRate = (sent * 1000) / (performance.now() - started);
// the planted key must come through the flood: give the last flush time to land
await waitFor('planted key promoted', () => plantedPromoted, 3000).catch(() => undefined);
const plantedHot = client.isHot(PLANTED);
clearInterval(sampler);
gc();
gc();
const heapAfter = process.memoryUsage().heapUsed;
toParent({ type: 'memory', heapBefore, heapAfter, heapPeak, achievedRate, plantedPromoted, plantedHot });
await client.close().catch(() => undefined);
process.exit(0);
