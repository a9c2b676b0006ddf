import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Lease } from '../../cache/hot-set.ts';
import type { HubLinks } from '../links.ts';
import {
  MAX_RECENT_BYTES,
  MAX_RECENT_READS,
  MAX_RECENT_VALUE_BYTES,
  RECENT_SURGE_MS,
  RecentReads,
} from './recent-reads.ts';

/** One hub owning every key, its link's lease as given; `clock` the time the part reads. */
function setup() {
  const state = { lease: { until: 1000 } as Lease, owner: 'h1' as string | undefined, clock: 0 };
  const links = {
    ownerLink: () => (state.owner === 'h1' ? { hub: 'h1', lease: state.lease } : undefined),
  } as unknown as HubLinks;
  return {
    state,
    recent: new RecentReads(
      () => links,
      () => state.clock,
    ),
  };
}
const settle = () => new Promise((r) => setImmediate(r));

test('a read kept under a live vouch and a current lease answers one load of its key, in its scope', async () => {
  const { recent } = setup();
  const vouch = { live: true };
  recent.sent('k', vouch, 0, Promise.resolve('v'));
  await settle();
  assert.is(recent.take('k', vouch, 1), undefined, 'another database');
  recent.sent('k', vouch, 0, Promise.resolve('v'));
  assert.is(await recent.take('k', vouch, 0), 'v');
  assert.is(recent.take('k', vouch, 0), undefined, 'taken once');
  assert.is(recent.used, 0, 'taken is not used: the load checks it further');
  recent.loadAnswered();
  assert.is(recent.used, 1);
});

test('a read still in flight is handed over as its promise', async () => {
  const { recent } = setup();
  const vouch = { live: true };
  let answer!: (v: string) => void;
  recent.sent('k', vouch, undefined, new Promise<string>((r) => (answer = r)));
  const reply = recent.take('k', vouch, undefined);
  assert.ok(reply);
  answer('late');
  assert.is(await reply, 'late');
});

test('nothing is kept or handed over once its vouchers fail: a dead or another session, another lease, a lapsed one, another owner', async () => {
  const { recent, state } = setup();
  const vouch = { live: true };
  const keep = (key: string) => recent.sent(key, vouch, 0, Promise.resolve('v'));
  recent.sent('dead', { live: false }, 0, Promise.resolve('v'));
  assert.is(recent.size, 0, 'not kept under a dead session');
  keep('a');
  assert.is(recent.take('a', { live: true }, 0), undefined, 'another session');
  keep('b');
  vouch.live = false;
  assert.is(recent.take('b', vouch, 0), undefined, 'its session ended');
  vouch.live = true;
  keep('c');
  state.lease = { until: 1000 }; // a reconnect: a new lease object
  assert.is(recent.take('c', vouch, 0), undefined, 'another link generation');
  keep('d');
  state.clock = 2000;
  assert.is(recent.take('d', vouch, 0), undefined, 'the lease lapsed');
  state.clock = 0;
  keep('e');
  state.owner = 'h2';
  assert.is(recent.take('e', vouch, 0), undefined, 'the key moved to another hub');
  recent.sent('f', vouch, 0, Promise.resolve('v'));
  assert.is(recent.size, 0, 'not kept without a current lease of its owner');
  assert.is(recent.used, 0);
});

test('a drop before the reply lands wins; a failed reply is forgotten', async () => {
  const { recent } = setup();
  const vouch = { live: true };
  let answer!: (v: string) => void;
  recent.sent('k', vouch, 0, new Promise<string>((r) => (answer = r)));
  recent.drop('k');
  answer('stale');
  await settle();
  assert.is(recent.take('k', vouch, 0), undefined);
  recent.sent('f', vouch, 0, Promise.reject(new Error('down')));
  await settle();
  assert.is(recent.size, 0);
  recent.sent('x', vouch, 0, Promise.resolve('v'));
  recent.clear();
  assert.is(recent.take('x', vouch, 0), undefined, 'cleared (a flush, a sequence gap)');
});

test('bounded: the oldest go past MAX_RECENT_READS entries and MAX_RECENT_BYTES, a value over MAX_RECENT_VALUE_BYTES is not kept', async () => {
  const { recent } = setup();
  const vouch = { live: true };
  for (let n = 0; n < MAX_RECENT_READS + 10; n++) recent.sent(`k${n}`, vouch, 0, Promise.resolve('v'));
  await settle();
  assert.is(recent.size, MAX_RECENT_READS);
  assert.is(recent.take('k0', vouch, 0), undefined, 'the oldest went first');
  assert.ok(recent.take(`k${MAX_RECENT_READS + 9}`, vouch, 0));
  recent.clear();
  recent.sent('big', vouch, 0, Promise.resolve('x'.repeat(MAX_RECENT_VALUE_BYTES)));
  await settle();
  assert.is(recent.size, 0, 'a value over the bound');
  const value = 'y'.repeat(MAX_RECENT_VALUE_BYTES / 4); // ~half the value bound, estimated as UTF-16
  const fit = Math.floor(MAX_RECENT_BYTES / (MAX_RECENT_VALUE_BYTES / 2 + 16));
  for (let n = 0; n < fit + 5; n++) recent.sent(`b${n}`, vouch, 0, Promise.resolve(value));
  await settle();
  assert.ok(recent.size <= fit, `${recent.size} values of ${value.length} characters kept, at most ${fit}`);
  assert.ok(recent.size >= fit - 1);
  assert.ok(recent.take(`b${fit + 4}`, vouch, 0), 'the newest stays');
});

test('a reply that landed less than RECENT_SURGE_MS ago is "just answered", as the adapter says or as it lands', async () => {
  const { recent, state } = setup();
  const vouch = { live: true };
  let answer!: (v: string) => void;
  const reply = new Promise<string>((r) => (answer = r));
  recent.sent('k', vouch, 0, reply);
  assert.not.ok(recent.answeredJustNow('k'), 'in flight');
  state.clock = 10;
  recent.answered('k', Promise.resolve('other')); // another read's reply: not this entry's
  assert.not.ok(recent.answeredJustNow('k'));
  recent.answered('k', reply);
  assert.ok(recent.answeredJustNow('k'));
  answer('v');
  await settle();
  state.clock = 10 + RECENT_SURGE_MS - 1;
  assert.ok(recent.answeredJustNow('k'), 'its landing time is the first one said');
  state.clock = 10 + RECENT_SURGE_MS;
  assert.not.ok(recent.answeredJustNow('k'));
  recent.sent('j', vouch, 0, Promise.resolve('w'));
  await settle();
  assert.ok(recent.answeredJustNow('j'), 'as it lands, when no adapter said it');
  assert.not.ok(recent.answeredJustNow('none'));
});

test.run();
