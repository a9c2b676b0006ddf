/**
 * HotKeyClient's invalidation requests and leases: acks and their failures, values served only
 * under a current lease.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HotKeyClient } from './client.ts';
import { ErrorCode, type HotKeyError } from '../errors.ts';
import { MsgType } from '../wire/protocol.ts';
import { waitFor } from '../../../test/support/wait.ts';
import { closeAll } from '../../../test/support/sdk-client.ts';
import { setup, teardown, promoted } from '../../../test/support/client-fixture.ts';

// A failed assertion skips a test's own teardown: close whatever it left open.
test.after.each(closeAll);

test('invalidate: ack, timeout, unavailable, closed', async () => {
  const s = await setup({ invalidateTimeoutMs: 50 });
  const p = s.hk.invalidate('k');
  const req = await s.sock.next(MsgType.InvalidateRequest);
  s.sock.send({ t: MsgType.Ack, id: req.id, seq: 1, fenced: ['i-9'], ms: 2001 });
  assert.equal(await p, { hub: 'hub-a', fenced: ['i-9'], ms: 2001 }, 'the ack names the fenced instances');
  const timedOut = await s.hk.invalidate('k2').catch((e: HotKeyError) => e);
  assert.is((timedOut as HotKeyError).code, ErrorCode.Timeout);
  const pending = s.hk.invalidate('k3');
  await s.sock.next(MsgType.InvalidateRequest);
  const closing = s.hk.close();
  const closed = await pending.catch((e: HotKeyError) => e);
  assert.is((closed as HotKeyError).code, ErrorCode.Closed);
  await closing;
  assert.is(await s.hk.get('k', () => 'after close'), 'after close');
  assert.is(((await s.hk.invalidate('k').catch((e: HotKeyError) => e)) as HotKeyError).code, ErrorCode.Closed);
  await s.peer.close();

  // no hub reachable: held (a hub may come back and ack it) until its deadline, never failed at once
  const down = new HotKeyClient({ app: 'shop', hubs: 'ws://127.0.0.1:1', invalidateTimeoutMs: 200 });
  let cached = 0;
  const err = await down.invalidate('x').catch((e: HotKeyError) => e);
  assert.is((err as HotKeyError).code, ErrorCode.Timeout);
  assert.is(await down.get('x', () => (cached++, 'loaded')), 'loaded', 'get never waits on the network');
  assert.is(cached, 1);
  await down.close();
});

test('lease: values are served only while the lease (send time + ms - margin) is current', async () => {
  // a 100 ms margin: the lease granted at t=0 for 1000 ms ends at 900. No tick (flushIntervalMs):
  // a tick between the clock moves would ask a renewal at 899 and the peer would grant it
  const s = await setup({ flushIntervalMs: 60_000 }, { leaseMs: 1000 });
  await promoted(s);
  let loads = 0;
  const loader = () => `v${++loads}`;
  assert.is(await s.hk.get('k', loader), 'v1');
  s.clock.t = 899;
  await new Promise((r) => setImmediate(r));
  assert.is(await s.hk.get('k', loader), 'v1', 'within the lease: a hit');
  s.clock.t = 900;
  await new Promise((r) => setImmediate(r));
  assert.is(await s.hk.get('k', loader), 'v2', 'lease over: the loader runs');
  assert.is(await s.hk.get('k', loader), 'v3', 'and is not served from cache either');
  assert.is(s.hk.stats().unleased, 2);
  await teardown(s);
});

test('lease: no grant, no cached value served; a refused renewal lets it lapse', async () => {
  const s = await setup({}, { leaseMs: false });
  await promoted(s);
  let loads = 0;
  const loader = () => `v${++loads}`;
  assert.is(await s.hk.get('k', loader), 'v1');
  assert.is(await s.hk.get('k', loader), 'v2', 'no lease: every read loads');
  const ask = await s.sock.next(MsgType.Lease);
  s.sock.send({ t: MsgType.Grant, id: ask.id, ms: 500 });
  await waitFor(
    'a hit under the lease',
    async () => (await s.hk.get('k', loader)) === `v${loads}` && s.hk.stats().hits > 0,
  );
  s.clock.t = 500; // the next ask is due at leaseMs / 4; the hub refuses it (no Grant)
  await s.sock.next(MsgType.Lease);
  await new Promise((r) => setImmediate(r));
  const before = loads;
  await s.hk.get('k', loader);
  assert.is(loads, before + 1, 'the lease lapsed: the loader runs');
  await teardown(s);
});

test('lease: every get() reads the clock itself, so no read that begins after a stall trusts an older reading', async () => {
  // no tick for a minute: only get() itself can notice that time moved (a SIGSTOP, a long GC)
  const s = await setup({ flushIntervalMs: 60_000 }, { leaseMs: 1000 });
  await promoted(s);
  let loads = 0;
  const loader = () => `v${++loads}`;
  assert.is(await s.hk.get('k', loader), 'v1');
  assert.is(await s.hk.get('k', loader), 'v1');
  // Three reactions run in one microtask checkpoint: a read, a stall that outlasts the lease (the
  // process stopped; the hub fenced it and acknowledged a write meanwhile), then a read that
  // begins after the stall. A clock read once per task would still be the first read's.
  const reads: Promise<string>[] = [];
  const queued = Promise.resolve();
  void queued.then(() => reads.push(s.hk.get('k', loader)));
  void queued.then(() => (s.clock.t = 5000));
  void queued.then(() => reads.push(s.hk.get('k', loader)));
  await queued;
  const [before, after] = await Promise.all(reads);
  assert.is(before, 'v1', 'the read before the stall: a hit');
  assert.is(after, 'v2', 'the read after the stall: the lease ended, so the loader runs');
  s.clock.t = 6000; // "resumed" again, before any timer ran
  await new Promise((r) => setImmediate(r));
  assert.is(await s.hk.get('k', loader), 'v3', 'the first read of a later task reads the clock too');
  await teardown(s);
});

test('leases on demand: a client that reads nothing stops asking one lease after its Welcome; a read asks again; a cached value keeps it asking', async () => {
  // the peer grants 1000 ms leases; the injected clock moves, the tick (every 10 ms) asks
  const s = await setup({ flushIntervalMs: 10 }, { leaseMs: 1000 });
  const asks = () => s.sock.grants;
  const ticks = () => new Promise((r) => setTimeout(r, 50));
  await waitFor("the Welcome's ask", () => asks() === 1);
  s.clock.t = 300;
  await waitFor('a renewal within the first lease', () => asks() === 2);
  // wanted for one lease after the Welcome: DEFAULT_LEASE_MS (2000), the hub's ms unknown then
  s.clock.t = 1000;
  await waitFor('a renewal at 1000', () => asks() === 3);
  s.clock.t = 2000; // nothing read or held since: no more asks
  await ticks();
  s.clock.t = 2600;
  await ticks();
  assert.is(asks(), 3, 'idle: no renewal');
  s.hk.track('x');
  await waitFor('an ask after a read', () => asks() === 4);
  await promoted(s);
  assert.is(await s.hk.get('k', () => 'v'), 'v');
  await waitFor('the value served from the cache under the new lease', async () => {
    await s.hk.get('k', () => 'loaded again');
    return s.hk.stats().hits > 0;
  });
  for (const t of [3000, 3300, 3600, 3900, 4200]) {
    s.clock.t = t;
    await ticks();
  }
  assert.ok(asks() >= 8, `a held value keeps the lease renewed (${asks()} asks)`);
  await teardown(s);
});

test('an idle client goes quiet: after its first lease it sends no Lease and no ping; a read ends it', async () => {
  const s = await setup({ flushIntervalMs: 10, pingIntervalMs: 30, quietPingIntervalMs: 60_000 }, { leaseMs: 1000 });
  let pings = 0;
  s.sock.ws.on('ping', () => pings++);
  const asks = () => s.sock.grants;
  const ticks = (ms: number) => new Promise((r) => setTimeout(r, ms));
  await waitFor('pings while the first lease is wanted', () => pings > 0);
  s.clock.t = 2000; // one lease (DEFAULT_LEASE_MS before any Grant said otherwise) with nothing read
  await ticks(50);
  const [p0, a0] = [pings, asks()];
  await ticks(300); // ten ping periods
  assert.is(pings, p0, 'quiet: no ping');
  assert.is(asks(), a0, 'no lease asked');
  s.hk.track('x');
  await waitFor('a read: a lease asked and the hub pinged again', () => asks() > a0 && pings > p0);
  await teardown(s);
});

test.run();
