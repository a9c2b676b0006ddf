import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Ownership } from '@hotkey/sdk/ownership';
import { packValue, type Member } from '@hotkey/sdk/protocol';
import { parseRules } from '@hotkey/sdk/rules';
import { Aggregator } from '../aggregate/aggregator.ts';
import { decodeChunk, encodeChunks, HANDOFF_CHUNK_BYTES, HANDOFF_CHUNK_KEYS } from './handoff-chunk.ts';
import { emptyHandoffCounters, Handoff, HANDOFF_GRACE_MS, type Accept } from './handoff.ts';
import type { WindowEntry } from '../aggregate/window-transfer.ts';

const RULES = parseRules([{ match: '*', threshold: 100, windowMs: 1000, hotMs: 10_000 }]);
const APP = 'shop';

interface Node {
  id: string;
  agg: Aggregator;
  handoff: Handoff;
  counters: ReturnType<typeof emptyHandoffCounters>;
  sent: { to: string; bytes: Uint8Array }[];
  /** markers sent: to whom, at which epoch */
  markers: { to: string; epoch: number }[];
  /** epochs heard from other hubs */
  heard: { from: string; epoch: number }[];
  warnings: Record<string, unknown>[];
  promoted: string[];
  demoted: string[];
  accept: Accept;
}

const clock = { now: 10_000 };
const members = (...ids: string[]): Member[] => ids.map((id) => ({ id, url: `ws://${id}` }));
const acceptOf = (self: string, ids: string[]): Accept => {
  const o = new Ownership(ids);
  return ids.length > 1 ? (key) => o.owner(key) === self : undefined;
};

function node(id: string, ids: string[], epoch = 1, maxKeys = 10_000): Node {
  const n = {
    id,
    sent: [],
    markers: [],
    heard: [],
    warnings: [],
    promoted: [],
    demoted: [],
    accept: acceptOf(id, ids),
  } as unknown as Node;
  n.agg = new Aggregator({
    rules: RULES,
    accept: n.accept,
    listener: { promote: (key) => n.promoted.push(key), demote: (key) => n.demoted.push(key) },
  });
  n.counters = emptyHandoffCounters();
  n.handoff = new Handoff(
    {
      selfId: id,
      maxKeys,
      send: (to, bytes) => {
        const chunk = decodeChunk(bytes);
        if (chunk.app === '') n.markers.push({ to, epoch: chunk.epoch });
        else n.sent.push({ to, bytes });
      },
      heard: (from, epoch) => n.heard.push({ from, epoch }),
      apps: () => [{ name: APP, aggregator: n.agg }],
      open: (app) => (app === APP ? n.agg : undefined),
      setAccept: (accept) => n.agg.setAccept(accept, clock.now),
      drainMs: 50,
      followMs: 0,
      leaveMs: 0,
      idle: () => true,
      counters: n.counters,
      logger: { error() {}, info() {}, debug() {}, warn: (o) => n.warnings.push(o as Record<string, unknown>) },
      wallNow: () => clock.now,
      monoNow: () => clock.now,
    },
    epoch,
    members(...ids),
  );
  return n;
}

/** the node's membership moves to `ids` at `epoch`, its draining round run at once */
function change(n: Node, epoch: number, ids: string[]): void {
  const before = n.accept;
  n.accept = acceptOf(n.id, ids);
  n.handoff.changed(epoch, members(...ids), before, n.accept);
  n.handoff.flush();
}

function keyOwned(ids: string[], owner: string, prefix: string, skip = 0): string {
  const o = new Ownership(ids);
  for (let i = 0, found = 0; i < 100_000; i++)
    if (o.owner(`${prefix}${i}`) === owner && found++ === skip) return `${prefix}${i}`;
  throw new Error('no key');
}

/** a key hub `was` owned among `before` and `now` owns among `after` */
function keyMoving(before: string[], was: string, after: string[], now: string, prefix: string): string {
  const o1 = new Ownership(before);
  const o2 = new Ownership(after);
  for (let i = 0; i < 100_000; i++) {
    const k = `${prefix}${i}`;
    if (o1.owner(k) === was && o2.owner(k) === now) return k;
  }
  throw new Error('no key');
}

function entry(key: string, counts: number, hotMs = 0): WindowEntry {
  return { key, sliceMs: 100, slices: [counts, 0, 0, 0, 0, 0, 0, 0, 0, 0], hotMs, hotAgeMs: hotMs > 0 ? 500 : 0 };
}

const chunk = (from: string, to: string, epoch: number, entries: WindowEntry[], app = APP) =>
  encodeChunks({ from, to, epoch, app }, entries)[0]!;

function refusedWith(n: Node, reason: string): void {
  assert.ok(
    n.warnings.some((w) => w.evt === 'handoff_refused' && w.reason === reason),
    `a handoff_refused warning with reason ${reason}: ${JSON.stringify(n.warnings)}`,
  );
}

const ABC = ['hub-a', 'hub-b', 'hub-c'];

test('leave: the leaving owner hands its window over; together with what the heir counted the key is promoted', () => {
  const key = keyOwned(ABC, 'hub-b', 'k:');
  const heirId = new Ownership(['hub-a', 'hub-c']).owner(key)!;
  const b = node('hub-b', ABC);
  const heir = node(heirId, ABC);
  b.agg.ingest([key], [60], 0, clock.now);
  change(heir, 2, ['hub-a', 'hub-c']);
  heir.agg.ingest([key], [50], 1, clock.now);
  assert.equal(heir.promoted, [], 'the heir alone has 50 of 100');
  change(b, 2, ['hub-a', 'hub-c']);
  assert.is(b.sent.length, 1);
  assert.is(b.sent[0]!.to, heirId);
  assert.is(b.agg.count(key, clock.now), 0, 'the leaving hub forgot the key once handed over');
  heir.handoff.receive(b.sent[0]!.bytes);
  assert.equal(heir.promoted, [key]);
  assert.is(heir.agg.count(key, clock.now), 110);
  assert.is(heir.counters.keysReceived, 1);
  assert.is(heir.counters.keysPromoted, 1);
});

test('leave: a chunk that reaches the heir before the new member list waits for it, then merges into the key the heir now owns', () => {
  const rest = ['hub-a', 'hub-c'];
  const key = keyOwned(ABC, 'hub-b', 'early:');
  const heirId = new Ownership(rest).owner(key)!;
  const b = node('hub-b', ABC, 2);
  const heir = node(heirId, ABC, 2);
  b.agg.ingest([key], [60], 0, clock.now);
  change(b, 3, rest);
  heir.handoff.receive(b.sent[0]!.bytes);
  assert.is(heir.handoff.pending, 1, 'epoch 3 is ahead of the heir');
  change(heir, 3, rest);
  assert.is(heir.handoff.pending, 0);
  assert.is(heir.counters.keysReceived, 1, 'merged, not dropped as another hub key');
  assert.is(heir.agg.count(key, clock.now), 60);
  heir.agg.ingest([key], [50], 1, clock.now);
  assert.equal(heir.promoted, [key], 'the handed-over 60 and the heir own 50 reach the threshold');
});

test('join: the old owner counts for the drain, then hands the keys the joiner takes over; a hot key stays hot there', () => {
  const all = [...ABC, 'hub-d'];
  const key = keyOwned(all, 'hub-d', 'j:');
  const oldOwner = new Ownership(ABC).owner(key)!;
  const old = node(oldOwner, ABC);
  const d = node('hub-d', all, 2);
  old.agg.ingest([key], [150], 0, clock.now);
  assert.equal(old.promoted, [key]);
  const before = old.accept;
  old.accept = acceptOf(oldOwner, all);
  old.handoff.changed(2, members(...all), before, old.accept);
  assert.is(old.sent.length, 1, 'handed over at once');
  d.handoff.receive(old.sent[0]!.bytes);
  assert.equal(d.promoted, [key], 'hot at the old owner: hot here for the lifetime it had left');
  assert.ok(d.agg.isHot(key));
  old.agg.ingest([key], [5], 0, clock.now);
  assert.is(old.agg.count(key, clock.now), 5, 'a late report is counted afresh while the change drains');
  old.handoff.flush();
  assert.is(old.sent.length, 2, 'and handed over in the next round');
  d.handoff.receive(old.sent[1]!.bytes);
  assert.is(d.agg.count(key, clock.now), 155);
  assert.is(d.counters.refused.conflict, 0, 'the same sender may hand a key over twice');
  assert.equal(old.demoted, [], 'the old owner forgets it without a demotion');
});

test('markers: each hub gaining keys hears the epoch its previous owners reached, whatever they tracked', () => {
  const a = node('a', ['a', 'b']);
  const b = node('b', ['a', 'b']);
  const c = node('c', ['a', 'b', 'c'], 2);
  change(a, 2, ['a', 'b', 'c']);
  assert.equal(a.markers, [{ to: 'c', epoch: 2 }], 'a staying member marks the joiner only');
  change(b, 3, ['a', 'c']);
  assert.equal(b.markers.map((m) => m.to).sort(), ['a', 'c'], 'a leaving member marks every member that stays');
  assert.ok(b.markers.every((m) => m.epoch === 3));
  change(c, 3, ['a', 'c']);
  const marker = (from: string, to: string, epoch: number) =>
    packValue({ hk: 1, from, to, epoch, part: 0, parts: 1, keys: [], slice: [], counts: [], hot: [], age: [] });
  c.handoff.receive(marker('b', 'c', 3));
  c.handoff.receive(marker('a', 'c', 9)); // ahead of c: heard at once, nothing waits
  assert.equal(c.heard, [
    { from: 'b', epoch: 3 },
    { from: 'a', epoch: 9 },
  ]);
  assert.is(c.handoff.pending, 0);
  assert.is(c.warnings.length, 0, 'a marker is no refusal');
  assert.is(c.counters.keysReceived, 0);
});

test('a hub that is not a member (nor left lately) is refused; nothing else changes', () => {
  const key = keyOwned(ABC, 'hub-a', 'x:');
  const a = node('hub-a', ABC, 3);
  a.agg.ingest([key], [40], 0, clock.now);
  a.handoff.receive(chunk('hub-x', 'hub-a', 3, [entry(key, 90)]));
  assert.is(a.counters.refused.not_member, 1);
  refusedWith(a, 'not_member');
  assert.is(a.agg.count(key, clock.now), 40);
  assert.equal(a.promoted, []);
  // a member that left is still heard for the grace period, not after
  change(a, 4, ['hub-a', 'hub-c']);
  const gone = keyMoving(ABC, 'hub-b', ['hub-a', 'hub-c'], 'hub-a', 'x:');
  a.handoff.receive(chunk('hub-b', 'hub-a', 4, [entry(gone, 10)]));
  assert.is(a.counters.keysReceived, 1, 'hub-b left a moment ago: heard');
  clock.now += HANDOFF_GRACE_MS + 1;
  a.handoff.tick();
  a.handoff.receive(chunk('hub-b', 'hub-a', 4, [entry(gone, 10)]));
  assert.is(a.counters.refused.not_member, 2, 'hub-b left too long ago');
});

test('a stale epoch is refused; a newer one waits for this hub to reach it, or is refused once the wait is over', () => {
  const key = keyOwned(['hub-a', 'hub-c'], 'hub-a', 's:');
  const a = node('hub-a', ['hub-a', 'hub-c'], 5);
  a.handoff.receive(chunk('hub-c', 'hub-a', 4, [entry(key, 90)]));
  assert.is(a.counters.refused.stale_epoch, 1);
  refusedWith(a, 'stale_epoch');
  assert.is(a.agg.count(key, clock.now), 0);

  // epoch 6 is ahead: held until this hub's list reaches it
  const all = ['hub-a', 'hub-c', 'hub-e'];
  const moved = keyOwned(all, 'hub-a', 'n:');
  const prior = new Ownership(['hub-c', 'hub-e']).owner(moved)!;
  a.handoff.receive(chunk(prior, 'hub-a', 6, [entry(moved, 30)]));
  assert.is(a.handoff.pending, 1);
  change(a, 6, all);
  assert.is(a.handoff.pending, 0);
  assert.is(a.agg.count(moved, clock.now), 30);

  a.handoff.receive(chunk('hub-c', 'hub-a', 9, [entry(moved, 30)]));
  clock.now += HANDOFF_GRACE_MS + 1;
  a.handoff.tick();
  assert.is(a.counters.refused.stale_epoch, 2, 'epoch 9 never came');
  assert.is(a.agg.count(moved, clock.now), 0, 'the window aged out; nothing was added');
});

test('a handoff over the bounds is refused: bytes, keys per chunk, keys per sender and epoch', () => {
  const ids = ['hub-a', 'hub-c'];
  const a = node('hub-a', ids, 7, 3);
  a.handoff.receive(new Uint8Array(HANDOFF_CHUNK_BYTES + 1));
  const keys = Array.from({ length: HANDOFF_CHUNK_KEYS + 1 }, (_, i) => `big:${i}`);
  a.handoff.receive(
    packValue({
      hk: 1,
      from: 'hub-c',
      to: 'hub-a',
      epoch: 7,
      app: APP,
      part: 0,
      parts: 1,
      keys,
      slice: keys.map(() => 100),
      counts: keys.flatMap(() => [1, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
      hot: keys.map(() => 0),
      age: keys.map(() => 0),
    }),
  );
  assert.is(a.counters.refused.too_large, 2);
  const mine = [0, 1, 2, 3].map((i) => keyOwned(ids, 'hub-a', 'cap:', i));
  a.handoff.receive(
    chunk(
      'hub-c',
      'hub-a',
      7,
      mine.map((k) => entry(k, 5)),
    ),
  );
  assert.is(a.counters.refused.too_large, 3, 'four keys from one sender where the bound is three');
  refusedWith(a, 'too_large');
  for (const k of mine) assert.is(a.agg.count(k, clock.now), 0);
  a.handoff.receive(
    chunk(
      'hub-c',
      'hub-a',
      7,
      mine.slice(0, 3).map((k) => entry(k, 5)),
    ),
  );
  assert.is(a.counters.keysReceived, 3, 'within the bound it is taken');
});

test('two hubs claiming one key: the first is merged, the second refused as a conflict', () => {
  // rank order hub-b > hub-a > hub-c: hub-b owned it, hub-a owns it once hub-b left, and hub-c
  // (a member) passes the owner check too, so only the claim record tells them apart
  const key = keyMoving(ABC, 'hub-b', ['hub-a', 'hub-c'], 'hub-a', 'dup:');
  const a = node('hub-a', ABC);
  change(a, 2, ['hub-a', 'hub-c']);
  a.handoff.receive(chunk('hub-b', 'hub-a', 2, [entry(key, 40)]));
  a.handoff.receive(chunk('hub-c', 'hub-a', 2, [entry(key, 40)]));
  assert.is(a.counters.refused.conflict, 1);
  refusedWith(a, 'conflict');
  assert.is(a.agg.count(key, clock.now), 40, 'counted once');
  a.handoff.receive(chunk('hub-b', 'hub-a', 2, [entry(key, 7)]));
  assert.is(a.agg.count(key, clock.now), 47, 'the same sender may follow up');
});

test('keys the receiver does not own, or the sender cannot have owned, are refused; the rest of the chunk merges', () => {
  const ids = ['hub-a', 'hub-c'];
  const a = node('hub-a', ids, 3);
  const foreign = keyOwned(ids, 'hub-c', 'o:');
  const mine = keyOwned(ids, 'hub-a', 'o:');
  a.handoff.receive(chunk('hub-c', 'hub-a', 3, [entry(foreign, 20), entry(mine, 20)]));
  assert.is(a.counters.refused.not_owner, 1);
  refusedWith(a, 'not_owner');
  assert.is(a.agg.count(foreign, clock.now), 0);
  assert.is(a.agg.count(mine, clock.now), 20);

  // hub-a's key whose runner-up is hub-c: hub-e, a member, cannot have owned it before hub-a
  const three = node('hub-a', ['hub-a', 'hub-c', 'hub-e'], 3);
  const key = keyMoving(['hub-c', 'hub-e'], 'hub-c', ['hub-a', 'hub-c', 'hub-e'], 'hub-a', 'r:');
  three.handoff.receive(chunk('hub-e', 'hub-a', 3, [entry(key, 20)]));
  assert.is(three.counters.refused.not_owner, 1);
  assert.is(three.agg.count(key, clock.now), 0);
  three.handoff.receive(chunk('hub-c', 'hub-a', 3, [entry(key, 20)]));
  assert.is(three.agg.count(key, clock.now), 20, 'its runner-up may');
});

test('malformed chunks and unknown apps are refused with their reason', () => {
  const a = node('hub-a', ['hub-a', 'hub-c'], 3);
  a.handoff.receive(new Uint8Array([0xc1]));
  a.handoff.receive(packValue({ hk: 1, from: 'hub-c' }));
  a.handoff.receive(chunk('hub-c', 'hub-z', 3, [entry('k', 1)]));
  assert.is(a.counters.refused.malformed, 3);
  a.handoff.receive(chunk('hub-c', 'hub-a', 3, [entry('k', 1)], 'nope'));
  assert.is(a.counters.refused.unknown_app, 1);
});

test('the sender is bounded: hot keys first, then the fullest windows; chunks stay within their bounds', () => {
  const ids = ['hub-a', 'hub-b'];
  const b = node('hub-b', ids, 1, 1000);
  const keys = Array.from({ length: 1200 }, (_, i) => keyOwned(ids, 'hub-b', 'm:', i));
  b.agg.ingest(
    keys,
    keys.map((_, i) => 1 + (i % 50)),
    0,
    clock.now,
  );
  b.agg.promote(keys[0]!, clock.now);
  change(b, 2, ['hub-a']);
  assert.is(b.counters.keysSent, 1000);
  assert.is(b.counters.keysDropped, 200);
  const decoded = b.sent.map((s) => {
    assert.ok(s.bytes.byteLength <= HANDOFF_CHUNK_BYTES);
    return decodeChunk(s.bytes);
  });
  assert.is(decoded.length, 2);
  const sent = decoded.flatMap((c) => c.entries);
  assert.ok(sent.length === 1000 && sent.every((e) => e.key !== undefined));
  assert.ok(sent[0]!.hotMs > 0, 'the hot key goes first');
  const smallest = Math.min(...sent.slice(1).map((e) => e.slices[0]!));
  assert.ok(smallest >= 1 && sent.slice(1).every((e) => e.slices[0]! >= smallest));
  const countOf = new Map(keys.map((k, i) => [k, 1 + (i % 50)]));
  const names = new Set(sent.map((e) => e.key));
  const largestCut = Math.max(...keys.filter((k) => !names.has(k)).map((k) => countOf.get(k)!));
  assert.ok(smallest >= largestCut, `the ${200} left out had the emptiest windows (${largestCut} ≤ ${smallest})`);
});

test.run();
