import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeServerMessage, MsgType, packValue, type ServerMessage } from '@hotkey/sdk/protocol';
import { RULE_DEFAULTS, type Rule } from '@hotkey/sdk/rules';
import { Broadcaster } from './broadcaster.ts';
import { HubMetrics } from '../observe/hub-metrics.ts';
import type { Peer } from '../peer.ts';
import type { Session } from '../ingest/session.ts';
import { ValuePush } from './value-push.ts';

class MemoryPeer implements Peer {
  readonly frames: ServerMessage[] = [];
  bufferedAmount = 0;
  send(data: Uint8Array): void {
    this.frames.push(decodeServerMessage(data));
  }
  close(): void {}
  of<T extends ServerMessage['t']>(t: T): Extract<ServerMessage, { t: T }>[] {
    return this.frames.filter((f) => f.t === t) as Extract<ServerMessage, { t: T }>[];
  }
}

const RULE: Rule = { ...RULE_DEFAULTS, match: '*', threshold: 10, cacheTtlMs: 1000, push: true };
const VALUE = packValue({ price: 42 });

function setup(n = 3) {
  const broadcaster = new Broadcaster({ maxBufferedBytes: 1 << 20 });
  const sessions = Array.from({ length: n }, () => ({ peer: new MemoryPeer() }) as unknown as Session);
  for (const s of sessions) broadcaster.peers.add(s.peer);
  const metrics = new HubMetrics();
  let next = 0;
  const shares = new ValuePush({
    broadcaster,
    sessions: () => sessions,
    metrics,
    fillTimeoutMs: 500,
    maxPushBytes: 1024,
    tickMs: 100,
    pick: () => next++ % sessions.length, // the first session, then the next one
  });
  const peer = (i: number) => sessions[i]!.peer as unknown as MemoryPeer;
  return { shares, sessions, metrics, peer, broadcaster };
}

test('promotion: one session asked; its push is broadcast with a higher version; refresh at ratio × TTL', () => {
  const { shares, sessions, metrics, peer } = setup();
  shares.promoted('k', RULE, 0);
  const fills = peer(0).of(MsgType.Fill);
  assert.is(fills.length, 1);
  assert.is(peer(1).of(MsgType.Fill).length, 0, 'only one session asked');
  shares.push(sessions[0]!, { t: MsgType.Push, key: 'k', ver: fills[0]!.ver, value: VALUE }, 10);
  for (let i = 0; i < 3; i++) {
    const values = peer(i).of(MsgType.Value);
    assert.is(values.length, 1, 'every session gets the value');
    assert.ok(values[0]!.ver > fills[0]!.ver);
    assert.equal([...values[0]!.value], [...VALUE]);
  }
  shares.tick(709);
  assert.is(metrics.fills, 1);
  shares.tick(710); // 10 + 0.8 × 1000 - a tick of 100
  assert.is(metrics.fills, 2, 'one refresh fill');
  assert.is(metrics.pushesAccepted, 1);
});

test('a push whose load began before an invalidation is discarded; so is one from a session not asked', () => {
  const { shares, sessions, metrics, peer } = setup();
  shares.promoted('k', RULE, 0);
  const ver = peer(0).of(MsgType.Fill)[0]!.ver;
  shares.push(sessions[1]!, { t: MsgType.Push, key: 'k', ver, value: VALUE }, 5);
  assert.is(metrics.pushesDiscarded, 1, 'not asked');
  shares.invalidated('k', false);
  shares.push(sessions[0]!, { t: MsgType.Push, key: 'k', ver, value: VALUE }, 5);
  assert.is(metrics.pushesDiscarded, 2, 'read before the write');
  assert.is(peer(2).of(MsgType.Value).length, 0);
  shares.invalidated('x', true); // a flush voids every key's round too
  shares.push(sessions[0]!, { t: MsgType.Push, key: 'k', ver: ver + 1, value: VALUE }, 5);
  assert.is(metrics.pushesDiscarded, 3);
  shares.push(sessions[0]!, { t: MsgType.Push, key: 'cold', ver: 1, value: VALUE }, 5);
  assert.is(metrics.pushesDiscarded, 4, 'a key not shared');
});

test('a fill not answered in time goes to another session once per round; a session that left is replaced', () => {
  const { shares, sessions, metrics, peer } = setup();
  shares.promoted('k', RULE, 0);
  shares.tick(499);
  assert.is(metrics.fills, 1);
  shares.tick(500);
  assert.is(metrics.fills, 2);
  assert.is(peer(1).of(MsgType.Fill).length, 1);
  shares.tick(1000);
  assert.is(metrics.fills, 2, 'at most two per round');
  shares.left(sessions[1]!, 1000);
  assert.is(metrics.fills, 2);
  shares.tick(1800); // the next round: 1000 + 0.8 × 1000
  assert.is(metrics.fills, 3);
  shares.left(sessions[2]!, 1801);
  assert.is(metrics.fills, 4, "the asked session's fill goes elsewhere when it leaves");
});

test('versions grow across keys and re-promotions; rules without share, demoted keys hold nothing', () => {
  const { shares, sessions, peer } = setup(1);
  shares.promoted('plain', { ...RULE, push: false }, 0);
  assert.is(shares.size, 0);
  shares.promoted('k', RULE, 0);
  const first = peer(0).of(MsgType.Fill)[0]!.ver;
  shares.push(sessions[0]!, { t: MsgType.Push, key: 'k', ver: first, value: VALUE }, 1);
  const pushed = peer(0).of(MsgType.Value)[0]!.ver;
  shares.demoted('k');
  assert.is(shares.size, 0);
  shares.promoted('k', RULE, 2);
  assert.ok(peer(0).of(MsgType.Fill)[1]!.ver > pushed, 'a re-promoted key never reuses a version');
});

test('suppliers: a pushing session vouches until an invalidation or a newer value; an update takes the next version', () => {
  const { shares, sessions, metrics, peer, broadcaster } = setup();
  shares.promoted('k', RULE, 0);
  const ver = peer(0).of(MsgType.Fill)[0]!.ver;
  shares.push(sessions[0]!, { t: MsgType.Push, key: 'k', ver, value: VALUE, form: 1 }, 5);
  assert.is(peer(1).of(MsgType.Value)[0]!.form, 1, 'the form is forwarded');
  assert.ok(shares.supplies('k', sessions[0]!));
  assert.equal(shares.orphaned(sessions[0]!), ['k']);
  assert.equal(shares.orphaned(sessions[1]!), []);
  const pushed = peer(1).of(MsgType.Value)[0]!.ver;
  const updated = shares.updated('k', sessions[1]!, 10, broadcaster.seq);
  assert.ok(updated !== undefined && updated > pushed, 'an update orders after the push');
  assert.ok(shares.supplies('k', sessions[1]!));
  assert.not.ok(shares.supplies('k', sessions[0]!), 'the update superseded the push');
  shares.invalidated('k', false);
  assert.equal(shares.orphaned(sessions[1]!), [], 'an invalidation ends the role');
  assert.is(
    shares.updated('cold', sessions[1]!, 10, broadcaster.seq),
    undefined,
    'a key not shared: a plain invalidation',
  );
  // a fill outstanding when an update lands is void: its push is discarded
  shares.tick(2000);
  const fill = peer(2).of(MsgType.Fill).at(-1) ?? peer(0).of(MsgType.Fill).at(-1) ?? peer(1).of(MsgType.Fill).at(-1);
  shares.updated('k', sessions[1]!, 2001, broadcaster.seq);
  const before = metrics.pushesDiscarded;
  for (const s of sessions) shares.push(s, { t: MsgType.Push, key: 'k', ver: fill!.ver, value: VALUE }, 2002);
  assert.is(metrics.pushesDiscarded, before + 3);
});

test('an update marked before another write of the key went out is not pushed (that write may be the newer)', () => {
  const { shares, sessions, metrics, broadcaster } = setup();
  shares.promoted('k', RULE, 0);
  const mark = broadcaster.seq; // writer A reads its value back with this mark
  // writer B's invalidation of the key goes out after A's mark
  const seq = broadcaster.broadcast({ t: MsgType.Invalidate, key: 'k' });
  shares.invalidated('k', false);
  shares.written('k', false, seq);
  assert.is(shares.updated('k', sessions[0]!, 10, mark), undefined, 'A: a plain invalidation');
  assert.is(metrics.updatesSuperseded, 1);
  // a write of another key, or a mark taken after B's broadcast, does not hold A back
  shares.promoted('j', RULE, 0);
  shares.written('j', false, broadcaster.broadcast({ t: MsgType.Invalidate, key: 'j' }));
  assert.ok(shares.updated('k', sessions[0]!, 11, seq) !== undefined, 'marked after B: pushed');
  // a flush counts as a write of every key
  const before = broadcaster.seq;
  shares.written('ignored', true, broadcaster.broadcast({ t: MsgType.Invalidate, key: 'ns', flush: true }));
  assert.is(shares.updated('k', sessions[0]!, 12, before), undefined, 'marked before a flush: plain');
  assert.is(metrics.updatesSuperseded, 2);
});

test('a push over maxPushBytes is discarded and counted; the SDKs load by themselves', () => {
  const { shares, sessions, metrics, peer } = setup();
  shares.promoted('k', RULE, 0);
  const ver = peer(0).of(MsgType.Fill)[0]!.ver;
  shares.push(sessions[0]!, { t: MsgType.Push, key: 'k', ver, value: new Uint8Array(1025) }, 5);
  assert.is(metrics.pushesOversized, 1);
  assert.is(metrics.pushesDiscarded, 1);
  assert.is(peer(1).of(MsgType.Value).length, 0);
  assert.equal(shares.orphaned(sessions[0]!), []);
});

test.run();
