import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Ownership } from '@hotkey/sdk/ownership';
import type { AppState } from '../apps.ts';
import { MEMBERSHIP_LAG_MS, OwnershipFence } from './ownership-fence.ts';

const LEASE = 2000;
const FENCE = LEASE + LEASE / 8 + MEMBERSHIP_LAG_MS;

function setup(initial: string[]) {
  const clock = { t: 10_000 };
  const fence = new OwnershipFence({
    selfId: 'b',
    leaseMs: LEASE,
    monoNow: () => clock.t,
    initial: new Ownership(initial),
  });
  return { clock, fence };
}

/** a key `owners` maps to the given owner, found by rendezvous hashing */
function keyOwnedBy(members: string[], owner: string, before?: { members: string[]; owner: string }): string {
  const now = new Ownership(members);
  const then = before === undefined ? undefined : new Ownership(before.members);
  for (let i = 0; ; i++) {
    const k = `k${i}`;
    if (now.owner(k) === owner && (then === undefined || then.owner(k) === before!.owner)) return k;
  }
}

test('a hub that just started acks no key before one fence', () => {
  const { clock, fence } = setup(['a', 'b']);
  const mine = keyOwnedBy(['a', 'b'], 'b');
  assert.is(fence.fenceMs, FENCE);
  assert.is(fence.notBefore(mine), 10_000 + FENCE);
  clock.t += FENCE;
  assert.ok(fence.notBefore(mine) <= clock.t, 'free once the fence passed');
});

test('a key gained in a change waits one fence from it; a key this hub kept does not', () => {
  const { clock, fence } = setup(['a', 'b']);
  clock.t += FENCE;
  const gained = keyOwnedBy(['b', 'c'], 'b', { members: ['a', 'b', 'c'], owner: 'a' });
  const kept = keyOwnedBy(['b', 'c'], 'b', { members: ['a', 'b', 'c'], owner: 'b' });
  fence.changed(new Ownership(['a', 'b', 'c']), new Ownership(['b', 'c']), 2);
  const changedAt = clock.t;
  assert.is(fence.notBefore(gained), changedAt + FENCE);
  assert.ok(fence.notBefore(kept) <= clock.t, `kept key not held (${fence.notBefore(kept)} vs ${clock.t})`);
  assert.is(fence.notBeforeAny(), changedAt + FENCE, 'a flush waits for every change');
  clock.t = changedAt + FENCE;
  assert.ok(fence.notBefore(gained) <= clock.t, 'free once the fence passed');
});

test('registrations wait out the same fence: after the start, and for a key gained in a change', () => {
  const { clock, fence } = setup(['a', 'b']);
  const mine = keyOwnedBy(['a', 'b'], 'b');
  assert.ok(fence.holdsWait(mine), 'just started: the hub that owned it before may still ack its writes');
  clock.t += FENCE;
  assert.not.ok(fence.holdsWait(mine), 'free once the start fence passed');
  const gained = keyOwnedBy(['b', 'c'], 'b', { members: ['a', 'b', 'c'], owner: 'a' });
  const kept = keyOwnedBy(['b', 'c'], 'b', { members: ['a', 'b', 'c'], owner: 'b' });
  fence.changed(new Ownership(['a', 'b', 'c']), new Ownership(['b', 'c']), 2);
  assert.ok(fence.holdsWait(gained), 'gained: its previous owner may not have heard of the change');
  assert.not.ok(fence.holdsWait(kept), 'kept: nobody else acked its writes');
  clock.t += FENCE - 1;
  assert.ok(fence.holdsWait(gained), 'still within the fence');
  clock.t += 1;
  assert.not.ok(fence.holdsWait(gained), 'free once the fence passed');
});

test('a request for a key another hub owns is held one fence from the request', () => {
  const { clock, fence } = setup(['a', 'b']);
  clock.t += 5 * FENCE;
  const theirs = keyOwnedBy(['a', 'b'], 'a');
  assert.is(fence.notBefore(theirs), clock.t + FENCE);
});

test("alone, or not listed, every key is this hub's", () => {
  const { clock, fence } = setup(['b']);
  clock.t += FENCE;
  assert.ok(fence.notBefore('any') <= clock.t);
  fence.changed(new Ownership(['b']), new Ownership([]), 2);
  clock.t += FENCE;
  assert.ok(fence.notBefore('any') <= clock.t);
});

test('a promotion of a gained key waits until its previous owner shows it knows of the change, or the fence passed', () => {
  const { clock, fence } = setup(['a', 'b', 'c']);
  clock.t += FENCE;
  const fromA = keyOwnedBy(['b', 'c'], 'b', { members: ['a', 'b', 'c'], owner: 'a' });
  const kept = keyOwnedBy(['b', 'c'], 'b', { members: ['a', 'b', 'c'], owner: 'b' });
  assert.not.ok(fence.promotionWaits(fromA), 'no fence running');
  fence.heard('a', 7); // the leaver's marker overtook the member list
  fence.changed(new Ownership(['a', 'b', 'c']), new Ownership(['b', 'c']), 7);
  assert.not.ok(fence.promotionWaits(fromA), 'a left and said so: it broadcasts writes of the key now');
  fence.changed(new Ownership(['b', 'c']), new Ownership(['a', 'b', 'c']), 8);
  fence.changed(new Ownership(['a', 'b', 'c']), new Ownership(['b', 'c']), 9);
  assert.ok(fence.promotionWaits(fromA), 'a may still ack its writes, directed to its own holders');
  assert.not.ok(fence.promotionWaits(kept), 'kept: nobody else acked its writes');
  fence.heard('a', 8);
  assert.ok(fence.promotionWaits(fromA), 'a chunk sent before a heard of the change proves nothing');
  fence.heard('c', 9);
  assert.ok(fence.promotionWaits(fromA), "another hub's word is not a's");
  fence.heard('a', 9);
  assert.not.ok(fence.promotionWaits(fromA), 'a reached the epoch: it broadcasts writes of the key now');
  assert.ok(fence.holdsWait(fromA), 'registrations still wait out the fence (its holders may serve)');
  clock.t += FENCE;
  assert.not.ok(fence.promotionWaits(fromA), 'free once the fence passed, heard or not');
});

test('a starting hub promotes nothing before its first member list, then waits for the members it found', () => {
  const { clock, fence } = setup(['b']);
  const fromA = keyOwnedBy(['a', 'b', 'c'], 'b', { members: ['a', 'c'], owner: 'a' });
  const fromC = keyOwnedBy(['a', 'b', 'c'], 'b', { members: ['a', 'c'], owner: 'c' });
  assert.ok(fence.promotionWaits(fromA), 'no list from the cluster yet: who owned it is unknown');
  fence.heard('a', 4); // a marker that overtook the member list
  fence.changed(new Ownership(['b']), new Ownership(['a', 'b', 'c']), 4);
  assert.not.ok(fence.promotionWaits(fromA), 'a knows b joined');
  assert.ok(fence.promotionWaits(fromC), 'c was not heard from');
  assert.ok(fence.holdsWait(fromA), 'registrations wait out the fence');
  clock.t += FENCE;
  assert.not.ok(fence.promotionWaits(fromC), 'free once the fence passed');
  const alone = setup(['b']);
  alone.fence.changed(new Ownership(['b']), new Ownership(['b']), 1);
  assert.ok(alone.fence.promotionWaits(fromA), 'listed alone: a hub Redis just dropped may still ack its writes');
  alone.clock.t += FENCE;
  assert.not.ok(alone.fence.promotionWaits(fromA), 'free once the fence passed');
});

test('lostHotKeys: hot keys owned before and not after, per app; none when leaving', () => {
  const { fence } = setup(['a', 'b']);
  const keys = Array.from({ length: 30 }, (_, i) => `hot${i}`);
  const app = { aggregator: { hot: () => keys.map((key) => ({ key })) } } as unknown as AppState;
  const before = new Ownership(['a', 'b']);
  const after = new Ownership(['a', 'b', 'c']);
  const lost = fence.lostHotKeys([app], (k) => before.owner(k) === 'b', after, 0).get(app) ?? [];
  const want = keys.filter((k) => before.owner(k) === 'b' && after.owner(k) !== 'b');
  assert.ok(want.length > 0 && want.length < keys.length / 2, `some keys move to c (${want.length})`);
  assert.equal(lost, want);
  assert.is(
    fence.lostHotKeys([app], undefined, new Ownership(['a']), 0).size,
    0,
    'leaving, it lets its leases run out',
  );
  assert.is(fence.lostHotKeys([app], undefined, new Ownership(['b']), 0).size, 0, 'alone it keeps every key');
});

test.run();
