import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode, HotKeyError } from '../../errors.ts';
import { PendingInvalidations } from './invalidations.ts';

async function rejection(p: Promise<unknown>): Promise<HotKeyError> {
  try {
    await p;
  } catch (err) {
    assert.instance(err, HotKeyError);
    return err as HotKeyError;
  }
  throw new Error('expected a rejection');
}

test('resolves on ack of the id it was sent with', async () => {
  const pending = new PendingInvalidations({ timeoutMs: 1000, maxPending: 10 });
  let sent = -1;
  const p = pending.add('k', 'h1', (id) => (sent = id));
  assert.is(pending.size, 1);
  pending.ack(sent, { hub: 'h1', fenced: ['i-2'], ms: 7 });
  assert.equal(await p, { hub: 'h1', fenced: ['i-2'], ms: 7 });
  assert.is(pending.size, 0);
});

test('refuses past maxPending with HK_ERR_UNAVAILABLE', async () => {
  const pending = new PendingInvalidations({ timeoutMs: 1000, maxPending: 1 });
  const first = pending.add('a', 'h1', () => {});
  assert.is((await rejection(pending.add('b', 'h1', () => {}))).code, ErrorCode.Unavailable);
  pending.closeAll();
  assert.is((await rejection(first)).code, ErrorCode.Closed);
});

test('times out with HK_ERR_TIMEOUT and counts it', async () => {
  const pending = new PendingInvalidations({ timeoutMs: 5, maxPending: 10 });
  assert.is((await rejection(pending.add('k', 'h1', () => {}))).code, ErrorCode.Timeout);
  assert.is(pending.timeouts, 1);
  assert.is(pending.size, 0);
});

test('one timer for every deadline: each times out timeoutMs after its own add, never before, whatever was acked', async () => {
  const pending = new PendingInvalidations({ timeoutMs: 30, maxPending: 10 });
  let first = -1;
  void pending.add('a', 'h1', (id) => (first = id));
  await new Promise((r) => setTimeout(r, 10));
  pending.ack(first, { hub: 'h1', fenced: [], ms: 1 }); // the timer stays set for a's deadline
  const t0 = performance.now();
  const b = pending.add('b', 'h1', () => {});
  const c = pending.add('c', 'h1', () => {});
  const deadline = AbortSignal.timeout(2000);
  const bounded = (p: Promise<unknown>) =>
    Promise.race([
      rejection(p),
      new Promise<never>((_, no) => deadline.addEventListener('abort', () => no(new Error('no timeout within 2 s')))),
    ]);
  const [eb, ec] = await Promise.all([bounded(b), bounded(c)]);
  assert.ok(performance.now() - t0 >= 30, 'not before its own deadline');
  assert.is(eb.code, ErrorCode.Timeout);
  assert.match(ec.message, /"c" not acknowledged within 30 ms/);
  assert.is(pending.timeouts, 2);
  assert.is(pending.size, 0);
});

test('a lost hub: its invalidations move to a new owner or are held until one is reachable', async () => {
  const pending = new PendingInvalidations({ timeoutMs: 1000, maxPending: 10 });
  const ids = new Map<string, number>();
  const moved = pending.add('moves', 'h1', (id) => ids.set('moves', id));
  const held = pending.add('held', 'h1', (id) => ids.set('held', id));
  const other = pending.add('other', 'h2', () => {});
  const resent: string[] = [];
  pending.hubLost('h1', (_id, key) => {
    resent.push(key);
    return key === 'moves' ? 'h3' : undefined;
  });
  assert.equal(resent.sort(), ['held', 'moves']);
  assert.is(pending.held, 1);
  pending.sendHeld(() => undefined);
  assert.is(pending.held, 1, 'still no owner');
  pending.sendHeld((id, key) => (key === 'held' && id === ids.get('held') ? 'h4' : undefined));
  assert.is(pending.held, 0);
  pending.ack(ids.get('held')!, { hub: 'h4', fenced: [], ms: 3 });
  assert.equal(await held, { hub: 'h4', fenced: [], ms: 3 }, 'acked by the hub it was held for');
  pending.hubLost('h3', () => undefined);
  assert.is(pending.size, 2);
  pending.closeAll();
  assert.is((await rejection(moved)).code, ErrorCode.Closed);
  assert.is((await rejection(other)).code, ErrorCode.Closed);
  assert.is(pending.held, 0);
});

test('held with no hub at all: times out HK_ERR_TIMEOUT saying why; held ones count against maxPending', async () => {
  const pending = new PendingInvalidations({ timeoutMs: 20, maxPending: 1 });
  let sent = 0;
  const first = pending.add('k', undefined, () => sent++);
  assert.is(sent, 0, 'nothing to send it to');
  const over = await rejection(pending.add('k2', undefined, () => {}));
  assert.is(over.code, ErrorCode.Unavailable);
  assert.match(over.message, /1 held/);
  const err = await rejection(first);
  assert.is(err.code, ErrorCode.Timeout);
  assert.match(err.message, /no hub owning it was reachable/);
  assert.is(pending.held, 0);
});

test.run();
