/**
 * The aggregator's ingest of Report frames, A/B between checkouts in one process: each tree's
 * own Aggregator and readReport take turns on the same pooled Zipf frames (as the ingest
 * benchmark's generators send them), 64 frames a turn, and each side reports percentiles of its
 * turns' ns per record. On a shared box, separate runs of the same code differ by 50 % as other
 * processes come and go; alternating turns see the same conditions, so a few ns show.
 *
 *   node --conditions=@hotkey/source --import tsx test/bench/aggregator-ab.ts <seconds> <tree> <tree> ...
 *
 * A tree is a checkout with its dependencies installed (e.g. this one and a copy of main).
 * `readP25` is readReport's share (checking and hashing the frame), the rest the aggregator's.
 */
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';
import { encode, MsgType } from '../../sdk/src/wire/protocol.ts';
import { mulberry32, ZipfSampler } from './zipf.ts';

const [secondsArg, ...trees] = process.argv.slice(2);
if (!secondsArg || trees.length === 0) {
  console.error('usage: aggregator-ab.ts <seconds> <tree> [<tree> ...]');
  process.exit(2);
}
const FRAMES_PER_TURN = 64;
/** ingest-load.worker.ts's RECORDS_PER_FRAME (importing that module would start the worker) */
const RECORDS_PER_FRAME = 500;
/** touched between frames: what the socket and WebSocket work of a real hub evicts */
const POLLUTE_BYTES = 256 * 1024;

// the ingest benchmark's pool: two generators' 64 frames of Zipf(1.1) keys over 50k
const frames: Uint8Array[] = [];
for (const seed of [100, 101]) {
  const zipf = new ZipfSampler({ n: 50_000, s: 1.1, seed });
  const random = mulberry32(seed + 1);
  for (let f = 0; f < 64; f++) {
    const keys: string[] = [];
    const counts: number[] = [];
    for (let i = 0; i < RECORDS_PER_FRAME; i++) {
      keys.push(`item:${zipf.next()}`);
      counts.push(1 + Math.floor(random() * 5));
    }
    frames.push(encode({ t: MsgType.Report, keys, counts }));
  }
}

interface Side {
  tree: string;
  ingest: (bytes: Uint8Array, reporter: number, now: number) => [readNs: bigint, ingestNs: bigint];
  tick: (now: number) => void;
  keys: () => number;
  turns: number[];
  reads: number[];
  frame: number;
}

const sides: Side[] = [];
for (const tree of trees) {
  // a tree from before the core's step folders has its files at the core's root
  const at = (path: string) => {
    const grouped = `${tree}/hub/src/core/${path}`;
    return pathToFileURL(existsSync(grouped) ? grouped : `${tree}/hub/src/core/${basename(path)}`).href;
  };
  const { Aggregator } = (await import(
    at('aggregate/aggregator.ts')
  )) as typeof import('../../hub/src/core/aggregate/aggregator.ts');
  const { readReport } = (await import(
    at('ingest/report-frame.ts')
  )) as typeof import('../../hub/src/core/ingest/report-frame.ts');
  const { parseRules } = (await import(
    pathToFileURL(`${tree}/sdk/src/rules.ts`).href
  )) as typeof import('../../sdk/src/rules.ts');
  const aggregator = new Aggregator({
    rules: parseRules([{ match: '*', threshold: 1000 }]),
    listener: { promote: () => undefined, demote: () => undefined },
  });
  // a session's key share as the hub passes it (fair admission), where the tree has one
  const share = (aggregator as { openShare?: () => unknown }).openShare?.() as
    | Parameters<typeof aggregator.ingestFrame>[5]
    | undefined;
  sides.push({
    tree,
    ingest: (bytes, reporter, now) => {
      const start = process.hrtime.bigint();
      const frame = readReport(bytes)!;
      const read = process.hrtime.bigint();
      aggregator.ingestFrame(frame, reporter, now, undefined, frame.length, share);
      return [read - start, process.hrtime.bigint() - read];
    },
    tick: (now) => aggregator.tick(now),
    keys: () => aggregator.stats.keys,
    turns: [],
    reads: [],
    frame: 0,
  });
}

const junk = new Float64Array(POLLUTE_BYTES / 8);
const until = Date.now() + Number(secondsArg) * 1000;
for (let turn = 0; Date.now() < until; turn++) {
  const side = sides[turn % sides.length]!;
  let readNs = 0n;
  let ingestNs = 0n;
  for (let k = 0; k < FRAMES_PER_TURN; k++) {
    // a simulated clock (1 ms per frame): every side sees the same times, so the same promotions
    const now = 1_764_000_000_000 + side.frame;
    const [read, ingest] = side.ingest(frames[side.frame % frames.length]!, (side.frame * 7) % 128, now);
    readNs += read;
    ingestNs += ingest;
    side.frame++;
    if (side.frame % 100 === 0) side.tick(now);
    for (let j = (side.frame * 8) % 64; j < junk.length; j += 8) junk[j]!++;
  }
  const records = FRAMES_PER_TURN * RECORDS_PER_FRAME;
  side.turns.push(Number(ingestNs) / records);
  side.reads.push(Number(readNs) / records);
}

const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return Number(sorted[Math.floor(p * (sorted.length - 1))]!.toFixed(1));
};
for (const side of sides)
  console.log(
    JSON.stringify({
      tree: side.tree,
      keys: side.keys(),
      turns: side.turns.length,
      ingestP10: percentile(side.turns, 0.1),
      ingestP25: percentile(side.turns, 0.25),
      ingestMedian: percentile(side.turns, 0.5),
      readP25: percentile(side.reads, 0.25),
    }),
  );
