import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { adapterView } from '../adapter-view.ts';
import { HotKeyClient } from '../client.ts';
import { estimateBytes } from './surge-local.ts';
import { DEFAULT_SURGE_LOCAL, resolveClientOptions, type SurgeLocalOptions } from '../../options.ts';
import { RULE_DEFAULTS } from '../../rules.ts';
import { MsgType } from '../../wire/protocol.ts';
import { delay, waitFor } from '../../../../test/support/wait.ts';
import { closeAll, connect as connectPeer, type Connected } from '../../../../test/support/sdk-client.ts';

test.after.each(closeAll);

/** `n` reads of `key` in one go (same slice, same task), counting the loader's calls. */
async function burst(hk: HotKeyClient, key: string, n: number, value: unknown = `v:${key}`): Promise<number> {
  let calls = 0;
  const loader = () => {
    calls++;
    return Promise.resolve(value);
  };
  await Promise.all(Array.from({ length: n }, () => hk.get(key, loader)));
  return calls;
}

/**
 * A client welcomed by a scripted hub whose first lease it has APPLIED (the peer's Grant may still
 * be in flight when `connect` returns): a key the hub promotes (seq 1) is vouched for. Local
 * surges need that lease; the tests' own broadcasts start at seq 2.
 */
async function connect(...args: Parameters<typeof connectPeer>): Promise<Connected> {
  const [options, ...rest] = args;
  const c = await connectPeer({ surgeLocal: true, ...options }, ...rest);
  if (args[1]?.leaseMs === false) return c;
  c.sock.send({
    t: MsgType.Promote,
    seq: 1,
    key: 'lease-probe',
    qps: 1,
    hotMs: 600_000,
    cacheTtlMs: 1000,
    cache: true,
    at: 0,
  });
  await waitFor('the first lease applied', () => adapterView(c.hk).vouches('lease-probe'));
  return c;
}

/** Moves the injected clock and lets the client's ticks (every 10 ms) run at it. */
async function tickAt(c: Connected, t: number): Promise<void> {
  c.clock.t = t;
  await delay(50);
}

// The test rule's threshold is 100: its slice level is fraction × 100, its job level jobAccesses (0: none), each
// at least minAccesses. A key's first access counts only in the window's sketch (its exact counter
// starts at the second), so the slice level is reached at one access more; the job count starts at
// the first. A burst reaches the lower of the two: that many reads reach the loader, the last one
// loading for all.
const { minAccesses, fraction, jobAccesses } = DEFAULT_SURGE_LOCAL;
const level = Math.min(
  Math.max(minAccesses, Math.ceil(fraction * 100)) + 1,
  jobAccesses > 0 ? Math.max(minAccesses, jobAccesses) : Infinity,
);

test('a key read surge-level times within one slice is served locally; the rest share one load', async () => {
  const c = await connect();
  const calls = await burst(c.hk, 'item:1', 50);
  // the reads before the level went to the loader as cold reads; the one at the level loads for all
  assert.is(calls, level);
  assert.ok(c.hk.isHot('item:1'));
  assert.is(await burst(c.hk, 'item:1', 20), 0, 'served from the local cache');
  const st = c.hk.stats();
  assert.is(st.surgeLocalPromotions, 1);
  assert.is(st.surgeLocalKeys, 1);
  assert.is(st.hotKeys, 2, 'with the lease probe');
});

test('surgeLocal: false turns it off: every cold read reaches the loader', async () => {
  const c = await connect({ surgeLocal: false });
  assert.is(await burst(c.hk, 'item:1', 50), 50);
  assert.not.ok(c.hk.isHot('item:1'));
  assert.is(c.hk.stats().surgeLocalPromotions, 0);
});

test('a rule that does not cache (cache: false) never surges locally', async () => {
  const c = await connect({}, { rules: [{ ...RULE_DEFAULTS, match: '*', threshold: 100, cache: false }] });
  assert.is(await burst(c.hk, 'item:1', 30), 30);
  assert.not.ok(c.hk.isHot('item:1'));
});

test('a key read fewer times per slice than the level stays cold', async () => {
  const c = await connect();
  let calls = 0;
  for (let slice = 0; slice < 5; slice++) {
    c.clock.t = slice * 100 + 1;
    await delay(30); // a tick moves the window to the next slice
    calls += await burst(c.hk, 'item:slow', DEFAULT_SURGE_LOCAL.minAccesses - 1);
  }
  assert.is(calls, 5 * (DEFAULT_SURGE_LOCAL.minAccesses - 1));
  assert.not.ok(c.hk.isHot('item:slow'));
});

test('no current lease from the owner hub: nothing is served locally', async () => {
  const c = await connect({}, { leaseMs: false });
  assert.is(await burst(c.hk, 'item:1', 30), 30);
  assert.not.ok(c.hk.isHot('item:1'));
});

test("the hub's invalidation drops a local value: the next read loads", async () => {
  const c = await connect();
  await burst(c.hk, 'item:1', 20, 'old');
  assert.is(await c.hk.get('item:1', () => 'unused'), 'old');
  c.sock.send({ t: MsgType.Invalidate, seq: 2, key: 'item:1' });
  await c.sock.next(MsgType.Applied);
  assert.is(await c.hk.get('item:1', () => 'new'), 'new');
  assert.is(await c.hk.get('item:1', () => 'newer'), 'new', 'still local, reloaded once');
});

test("the hub's promotion confirms a local surge: value kept, 'promote' emitted, counted", async () => {
  const c = await connect();
  await burst(c.hk, 'item:1', 20, 'v1');
  const promoted: string[] = [];
  c.hk.on('promote', (key) => promoted.push(key));
  c.sock.send({
    t: MsgType.Promote,
    seq: 2,
    key: 'item:1',
    qps: 900,
    hotMs: 60_000,
    cacheTtlMs: 10_000,
    cache: true,
    at: 0,
  });
  await waitFor('the promotion', () => promoted.length === 1);
  assert.is(await burst(c.hk, 'item:1', 5, 'v2'), 0, 'the local value stays');
  await waitFor('confirmed on a tick', () => c.hk.stats().surgeLocalConfirmed === 1);
  assert.is(c.hk.stats().surgeLocalKeys, 0);
  // no longer bound by the local deadline: hot past two windows
  await tickAt(c, 5000);
  assert.ok(c.hk.isHot('item:1'));
  assert.is(c.hk.stats().surgeLocalDropped, 0);
});

test('a local surge the hub does not confirm within two windows is dropped, and not re-promoted for retryMs', async () => {
  const c = await connect({ surgeLocal: { retryMs: 5000 } });
  const demoted: string[] = [];
  c.hk.on('demote', (key) => demoted.push(key));
  await burst(c.hk, 'item:1', 20);
  assert.ok(c.hk.isHot('item:1'));
  await tickAt(c, 1999);
  assert.ok(c.hk.isHot('item:1'), 'still within two windows');
  c.clock.t = 2001;
  await waitFor('dropped on a tick', () => !c.hk.isHot('item:1'));
  assert.is(c.hk.stats().surgeLocalDropped, 1);
  assert.equal(demoted, [], "no 'demote' event: the hub never promoted it");
  // surging again right away: served by the loader, not locally
  assert.is(await burst(c.hk, 'item:1', 20), 20);
  // after retryMs it may surge locally again
  await tickAt(c, 2001 + 5000 + 100);
  assert.is(await burst(c.hk, 'item:1', 20), level);
  assert.ok(c.hk.isHot('item:1'));
});

test('bounded: at most maxKeys local surges, and values over maxBytes are dropped', async () => {
  const c = await connect({ surgeLocal: { maxKeys: 2, maxBytes: 1000 } });
  await burst(c.hk, 'a', 10);
  await burst(c.hk, 'b', 10);
  assert.is(await burst(c.hk, 'c', 10), 10, 'a third key is not served locally');
  assert.not.ok(c.hk.isHot('c'));
  const c2 = await connect({ surgeLocal: { maxBytes: 1000 } });
  const big = 'x'.repeat(2000);
  await burst(c2.hk, 'big', 10, big);
  assert.not.ok(c2.hk.isHot('big'), 'dropped once its value was seen to be too large');
  assert.is(c2.hk.stats().surgeLocalDropped, 1);
  assert.is(c2.hk.stats().cacheSize, 0);
});

test('track() counts an adapter-style cold read: the key surges and its next reads are hot', async () => {
  const c = await connect();
  for (let i = 0; i < level; i++) {
    assert.not.ok(c.hk.isHot('item:t'));
    c.hk.track('item:t');
  }
  assert.ok(c.hk.isHot('item:t'));
  assert.is(adapterView(c.hk).replicasOf('item:t'), 1);
});

test('jobAccesses reads of a key in one synchronous job surge it; as many spread over jobs do not', async () => {
  // fraction 1: the slice level is the rule's whole threshold (100), out of reach of these reads
  const c = await connect({ surgeLocal: { fraction: 1, jobAccesses: 8 } });
  // the first read, which only enters the window's sketch, counts in the job too: the 8th
  // surges it, and loads for the rest
  assert.is(await burst(c.hk, 'item:job', 20), 8);
  assert.ok(c.hk.isHot('item:job'));
  let calls = 0;
  for (let i = 0; i < 20; i++) {
    await c.hk.get('item:spread', () => {
      calls++;
      return 'v';
    });
  }
  assert.is(calls, 20, 'one read per job: each reaches the loader');
  assert.not.ok(c.hk.isHot('item:spread'));
});

test('trackConcurrent: a key not counted before surges at its second read; a counted one needs two reads unanswered', async () => {
  // fraction 1: the slice level is the rule's whole threshold (100), out of reach of these reads
  const c = await connect({ surgeLocal: { fraction: 1 } });
  c.hk.track('item:new'); // its first read: the sketch only
  adapterView(c.hk).trackConcurrent('item:new', 1);
  assert.ok(c.hk.isHot('item:new'), 'read twice within one round trip');
  for (let i = 0; i < 3; i++) {
    c.hk.track('item:old'); // counted: an exact counter of 2
    await Promise.resolve(); // each read a job of its own (jobAccesses)
  }
  adapterView(c.hk).trackConcurrent('item:old', 1);
  assert.not.ok(c.hk.isHot('item:old'), 'one read unanswered: as a Zipf head key has now and then');
  adapterView(c.hk).trackConcurrent('item:old', 2);
  assert.ok(c.hk.isHot('item:old'), 'two reads unanswered');
  assert.is(c.hk.stats().surgeLocalPromotions, 2);
});

test('trackConcurrent: a counted key with one read unanswered still surges at its slice level', async () => {
  // the default fraction: the slice level is a few reads, reached by reads that each overlap one
  // unanswered read (a flash key's next tick while its previous GET is out)
  const c = await connect();
  c.clock.t = 1;
  await delay(30);
  const sliceLevel = Math.max(minAccesses, Math.ceil(fraction * 100));
  c.hk.track('item:tick');
  await Promise.resolve();
  c.hk.track('item:tick'); // counted now, one short of its level
  for (let n = 2; n < sliceLevel; n++) {
    await Promise.resolve();
    c.hk.track('item:tick');
  }
  assert.not.ok(c.hk.isHot('item:tick'));
  await Promise.resolve();
  adapterView(c.hk).trackConcurrent('item:tick', 1);
  assert.ok(c.hk.isHot('item:tick'), 'the slice count reached its level');
});

test('trackConcurrent never surges a key whose rule does not cache', async () => {
  const c = await connect(
    { surgeLocal: { fraction: 1 } },
    { rules: [{ ...RULE_DEFAULTS, match: '*', threshold: 100, cache: false }] },
  );
  c.hk.track('item:nc');
  adapterView(c.hk).trackConcurrent('item:nc', 1);
  adapterView(c.hk).trackConcurrent('item:nc', 2);
  assert.not.ok(c.hk.isHot('item:nc'));
});

test('options.surgeLocal is checked', () => {
  const base = { app: 'a', hubs: 'ws://127.0.0.1:1' };
  const bads = [
    { fraction: 0 },
    { fraction: 2 },
    { share: 2 },
    { maxKeys: 0 },
    { jobAccesses: -1 },
    { nope: 1 },
    'yes',
    null,
  ];
  for (const bad of bads) {
    assert.throws(() => new HotKeyClient({ ...base, surgeLocal: bad as never }), TypeError, JSON.stringify(bad));
  }
});

test('surgeLocal.share, the deprecated name of fraction, sets the same level; both differing is a TypeError', () => {
  const base = { app: 'a', hubs: 'ws://127.0.0.1:1' };
  const resolved = (surgeLocal: SurgeLocalOptions) => {
    const opts = resolveClientOptions(
      { ...base, surgeLocal },
      () => 'host',
      (host) => host,
    ).surgeLocal;
    assert.ok(opts !== false);
    return opts;
  };
  assert.equal(resolved({ share: 0.25 }), resolved({ fraction: 0.25 }));
  assert.is(resolved({ share: 0.25 }).fraction, 0.25);
  assert.is(resolved({ fraction: 0.25, share: 0.25 }).fraction, 0.25, 'both, saying the same');
  assert.throws(
    () => resolved({ fraction: 0.25, share: 0.5 }),
    (err: unknown) => err instanceof TypeError && /surgeLocal\.fraction is 0\.25 but share.* is 0\.5/.test(err.message),
  );
  assert.throws(
    () => resolved({ share: 2 }),
    (err: unknown) => err instanceof TypeError && err.message.startsWith('options.surgeLocal.fraction (given as share'),
    'the error names the current option',
  );
});

test('estimateBytes grows with the value and stops at shared objects', () => {
  assert.ok(estimateBytes('x'.repeat(1000)) >= 2000);
  assert.ok(estimateBytes({ a: 'x'.repeat(1000) }) > estimateBytes({ a: 'x' }));
  assert.ok(estimateBytes([1, 2, 3]) > estimateBytes([]));
  class Session {
    big = 'x'.repeat(100_000);
  }
  assert.ok(estimateBytes({ value: 'v', session: new Session() }) < 1000);
  const deep: Record<string, unknown> = {};
  let at = deep;
  for (let i = 0; i < 100; i++) at = at.next = {} as Record<string, unknown>;
  assert.ok(estimateBytes(deep) < 1000);
});

test.run();
