import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode, HotKeyError } from '../errors.ts';
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

test('a lost hub: its invalidations move to a new owner or fail now', async () => {
  const pending = new PendingInvalidations({ timeoutMs: 1000, maxPending: 10 });
  const ids = new Map<string, number>();
  const moved = pending.add('moves', 'h1', (id) => ids.set('moves', id));
  const failed = pending.add('fails', 'h1', () => {});
  const other = pending.add('other', 'h2', () => {});
  const resent: string[] = [];
  pending.hubLost('h1', (_id, key) => {
    resent.push(key);
    return key === 'moves' ? 'h3' : undefined;
  });
  assert.equal(resent.sort(), ['fails', 'moves']);
  assert.is((await rejection(failed)).code, ErrorCode.Unavailable);
  pending.hubLost('h3', () => undefined);
  assert.is((await rejection(moved)).code, ErrorCode.Unavailable, 'it now belongs to h3');
  assert.is(pending.size, 1);
  pending.closeAll();
  assert.is((await rejection(other)).code, ErrorCode.Closed);
});

test.run();
