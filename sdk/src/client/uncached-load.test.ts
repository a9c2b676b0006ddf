/**
 * `adapterView(hk).uncachedLoad`: what an adapter's loader reads to tell a load whose value get() will cache
 * (it sends a tracked load) from one it will not (it sends the caller's plain read). True only
 * while get() calls a loader it does not cache for, nested calls included.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MsgType } from '../wire/protocol.ts';
import { adapterView } from './adapter-view.ts';
import { waitFor } from '../../../test/support/wait.ts';
import { closeAll, connect } from '../../../test/support/sdk-client.ts';

test.after.each(closeAll);

test('a cold key’s loader runs uncached; a hot key’s cached load does not, even nested in an uncached one', async () => {
  const s = await connect({ token: 's3cret' });
  const seen: Array<[string, boolean]> = [];
  const loader = (key: string) => {
    seen.push([key, adapterView(s.hk).uncachedLoad]);
    return `${key}-value`;
  };
  assert.is(adapterView(s.hk).uncachedLoad, false, 'outside any loader');
  assert.is(await s.hk.get('item:cold', loader), 'item:cold-value');
  s.sock.send({
    t: MsgType.Promote,
    seq: 1,
    key: 'item:hot',
    qps: 5000,
    hotMs: 60_000,
    cacheTtlMs: 10_000,
    cache: true,
    at: 0,
  });
  await waitFor('item:hot hot', () => s.hk.isHot('item:hot'));
  // a cold key's loader that reads the hot key: the inner load is cached, the outer is not
  const outer = await s.hk.get('item:outer', async (key) => {
    seen.push([key, adapterView(s.hk).uncachedLoad]);
    const inner = s.hk.get('item:hot', loader);
    seen.push([`${key} after`, adapterView(s.hk).uncachedLoad]);
    return inner;
  });
  assert.is(outer, 'item:hot-value');
  assert.is(s.hk.stats().cacheSize, 1, 'the hot key was cached');
  assert.equal(seen, [
    ['item:cold', true],
    ['item:outer', true],
    ['item:hot', false],
    ['item:outer after', true],
  ]);
  assert.is(adapterView(s.hk).uncachedLoad, false);
  await s.hk.close();
  // closed: every get() goes to the loader, nothing is cached
  assert.is(await s.hk.get('item:hot', loader), 'item:hot-value');
  assert.equal(seen.at(-1), ['item:hot', true]);
  await s.peer.close();
});

test.run();
