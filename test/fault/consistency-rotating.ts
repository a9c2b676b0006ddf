/**
 * The rotating-key role of the consistency checker (consistency-checker.test.ts), for both clients'
 * worker processes: a new key every `roundMs` (`<prefix><round>`, the round taken from the host
 * clock, so every process agrees on it without talking), under a prefix the readers' wrapped
 * clients have Redis track by broadcast (`tracking: { prefixes }`). Such a key's first cold GET is
 * kept (sdk client/read/recent-reads.ts) and, when the key surges here, its load takes that reply
 * instead of reading the key again. That is only right while nothing may have written the key
 * since the GET was sent; the role makes writes land in exactly that gap.
 *
 * Each round, a reader process reads the round's key once, alone (the kept cold read), waits a
 * random part of one surge slice, reads it in a burst of BURST reads in one job (the key surges
 * here and its load takes the kept reply, unless something dropped it), then reads it every few ms
 * until the round ends (served locally). The one writer process of the round (round % writers)
 * writes the key WRITES_PER_ROUND times, one after another, from a random point of the round's
 * first part (before, amid or after the readers' bursts): versions of a key grow in the order
 * Redis applies them, so the judge's "older than an acked write" holds.
 * Reads and writes are recorded as consistency-records-out.ts records them ('ckf-first',
 * 'ckf-burst', 'ckf' for the reads); the SDK's count of loads answered by a kept reply
 * (`recentReadsUsed`) is sampled as ['u', time, increase].
 *
 * Asked over IPC (`signal-gap`), a reader says `gap` as soon as its next first read of a round
 * another process writes was answered, and waits the longest gap that round: the parent stops
 * it (SIGSTOP) right there, so that a write is acked (fenced) while it holds a kept reply.
 */
import { hostNow } from '../support/host-clock.ts';
import { delay } from '../support/wait.ts';
import { recordReads, recordWrite, type RecordsOut } from './consistency-records-out.ts';

export interface RotatingConfig {
  /** the key family, tracked by broadcast by the readers' wrapped clients */
  prefix: string;
  roundMs: number;
  /** this process writes the keys of the rounds r with r % writers === writeSlot */
  writeSlot?: number;
  writers?: number;
}

/** reads of a round's key in its surge burst: one job, far past the rule's local surge level */
const BURST = 20;
/** a round's first read comes within this many ms of its start */
const FIRST_READ_WITHIN_MS = 30;
/**
 * the burst follows the first read's reply within this: inside the SDK's RECENT_SURGE_MS (100),
 * so that it surges the key as a read right after a kept reply, wherever it lands in the slice
 */
const BURST_WITHIN_MS = 80;
/**
 * a round's first write comes within this many ms of its start (random): early, its writes land in
 * readers' first read → burst gaps; late, they find the key surged, and its load took a kept reply
 */
const WRITE_START_WITHIN_MS = 120;
/** writes of a round's key by its writer, each after the previous one settled */
const WRITES_PER_ROUND = 4;
/** gap between a round's writes, at most (ms, random) */
const WRITE_GAP_MS = 30;
/** rounds whose writes are still in flight at most (a frozen link holds each write ~2 s) */
const MAX_ROUNDS_WRITING = 32;

export const rotatingKey = (cfg: RotatingConfig, round: number): string => `${cfg.prefix}${round}`;

const jitter = (ms: number) => Math.random() * ms;

/** Waits for the next round to begin; its number. */
async function nextRound(cfg: RotatingConfig, after: number): Promise<number> {
  for (;;) {
    const now = hostNow();
    const round = Math.floor(now / cfg.roundMs);
    if (round > after) return round;
    await delay((round + 1) * cfg.roundMs - now + 1);
  }
}

/** One reader of each round's key, until stopped. */
export async function rotatingReader(
  out: RecordsOut,
  cfg: RotatingConfig,
  get: (key: string) => Promise<unknown>,
): Promise<void> {
  let gapWanted = false;
  process.on('message', (msg: { type: string }) => {
    if (msg.type === 'signal-gap') gapWanted = true;
  });
  let round = -1;
  while (out.running) {
    round = await nextRound(cfg, round);
    const start = round * cfg.roundMs;
    const key = rotatingKey(cfg, round);
    await delay(Math.max(0, start + jitter(FIRST_READ_WITHIN_MS) - hostNow()));
    if (!out.running) return;
    // alone in its job: a cold GET, kept
    await recordReads(out, [key], 'ckf-first', async () => [await get(key)]);
    if (gapWanted && round % (cfg.writers ?? 1) !== cfg.writeSlot) {
      gapWanted = false;
      process.send?.({ type: 'gap', key });
      await delay(BURST_WITHIN_MS);
    } else await delay(jitter(BURST_WITHIN_MS));
    if (!out.running) return;
    // issued in one job: the first surges the key, the rest share its load
    await Promise.all(
      Array.from({ length: BURST }, () => recordReads(out, [key], 'ckf-burst', async () => [await get(key)])),
    );
    while (out.running && hostNow() < start + cfg.roundMs - 15) {
      await delay(5);
      await recordReads(out, [key], 'ckf', async () => [await get(key)]);
    }
  }
}

/**
 * The writer of this process's rounds' keys, until stopped: each round's writes run on their own
 * (a write held by a frozen link delays only its own round's next ones).
 */
export async function rotatingWriter(
  out: RecordsOut,
  cfg: RotatingConfig,
  kind: string,
  write: (key: string, value: string) => Promise<boolean>,
): Promise<void> {
  const writers = cfg.writers ?? 1;
  let version = Math.floor(hostNow()); // grows across restarts of this process
  let writing = 0;
  let round = -1;
  const writeRound = async (key: string) => {
    writing++;
    try {
      await delay(jitter(WRITE_START_WITHIN_MS));
      for (let i = 0; i < WRITES_PER_ROUND && out.running; i++) {
        if (i > 0) await delay(jitter(WRITE_GAP_MS));
        await recordWrite(out, key, kind, ++version, (value) => write(key, value));
      }
    } finally {
      writing--;
    }
  };
  while (out.running) {
    round = await nextRound(cfg, round);
    if (round % writers !== cfg.writeSlot || writing >= MAX_ROUNDS_WRITING) continue;
    void writeRound(rotatingKey(cfg, round));
  }
}

/** Samples `count` (a counter that only grows) every 100 ms as ['u', time, increase] records. */
export function sampleCounter(out: RecordsOut, count: () => number): void {
  let last = count();
  const timer = setInterval(() => {
    if (!out.running) return void clearInterval(timer);
    const n = count();
    if (n !== last) out.push(['u', hostNow(), n - last]);
    last = n;
  }, 100);
  timer.unref();
}
