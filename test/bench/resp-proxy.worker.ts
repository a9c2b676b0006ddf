/**
 * A counting TCP proxy in front of one redis-server, in a process of its own (its parsing must not
 * slow the hub or the services it measures). Every client of a benchmark connects through it, so
 * what it counts is what reached Redis, whatever the client and on every connection (the adapters'
 * tracking loads too): GETs, the flash key's GETs per bucket since `startAt`, and the invalidation
 * pushes Redis sent. With `suffix`, a GET of any key ending in the flash key counts as the flash
 * key's (a cache library that stores it under a prefix of its own: `bentocache:…`, `keyv:…`).
 *
 *   <- { type: 'start', redisPort, flashKey, suffix? }         -> { type: 'listening', port }
 *   <- { type: 'proxy', op: 'window', startAt (hostNow ms), bucketMs, buckets }   resets the counts
 *   <- { type: 'proxy', op: 'read' }   -> { type: 'counts', gets, flashGets, flashBuckets, getBuckets, pushes, connections }
 */
import { createConnection, createServer } from 'node:net';
import { once } from 'node:events';
import { fromParent, toParent } from './harness.ts';
import { INVALIDATION_HEADS, isCommand, PatternCounter, RespCommandReader } from './resp-counter.ts';
import { hostNow } from '../support/host-clock.ts';

const { redisPort, flashKey, suffix } = await fromParent<{ redisPort: number; flashKey: string; suffix?: boolean }>(
  'start',
  60_000,
);
const flash = Buffer.from(flashKey);
const isFlash = (key: Buffer) =>
  suffix ? key.length >= flash.length && flash.equals(key.subarray(key.length - flash.length)) : key.equals(flash);

let startAt = Number.POSITIVE_INFINITY;
let bucketMs = 100;
let flashBuckets: number[] = [];
/** every GET per bucket */
let getBuckets: number[] = [];
let gets = 0;
let flashGets = 0;
const pushCounters = new Set<PatternCounter>();
let pushesBefore = 0;
let connections = 0;

const onCommand = (name: Buffer, key: Buffer | undefined) => {
  if (!isCommand(name, 'get')) return;
  gets++;
  const at = Math.floor((hostNow() - startAt) / bucketMs);
  const inWindow = at >= 0 && at < flashBuckets.length;
  if (inWindow) getBuckets[at]!++;
  if (key === undefined || !isFlash(key)) return;
  flashGets++;
  if (inWindow) flashBuckets[at]!++;
};
const pushes = () => {
  let n = 0;
  for (const c of pushCounters) n += c.count;
  return n - pushesBefore;
};

const server = createServer((client) => {
  connections++;
  const upstream = createConnection({ host: '127.0.0.1', port: redisPort });
  const commands = new RespCommandReader(onCommand);
  const invalidations = new PatternCounter(INVALIDATION_HEADS);
  pushCounters.add(invalidations);
  client.on('data', (chunk) => {
    commands.feed(chunk);
    if (!upstream.write(chunk)) client.pause();
  });
  upstream.on('drain', () => client.resume());
  upstream.on('data', (chunk) => {
    invalidations.feed(chunk);
    if (!client.write(chunk)) upstream.pause();
  });
  client.on('drain', () => upstream.resume());
  const end = () => {
    // a closed connection's pushes still count for the window it was in
    client.destroy();
    upstream.destroy();
  };
  client.on('error', end).on('close', end);
  upstream.on('error', end).on('close', end);
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
toParent({ type: 'listening', port: (server.address() as { port: number }).port });

for (;;) {
  const m = await fromParent<{ op: 'window' | 'read'; startAt: number; bucketMs: number; buckets: number }>(
    'proxy',
    3_600_000,
  );
  if (m.op === 'window') {
    startAt = m.startAt;
    bucketMs = m.bucketMs;
    flashBuckets = new Array<number>(m.buckets).fill(0);
    getBuckets = new Array<number>(m.buckets).fill(0);
    gets = 0;
    flashGets = 0;
    pushesBefore = 0;
    pushesBefore = pushes();
  } else {
    toParent({ type: 'counts', gets, flashGets, flashBuckets, getBuckets, pushes: pushes(), connections });
  }
}
