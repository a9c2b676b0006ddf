/**
 * `HotKeyClient` stays a page: at most 22 public members of its own (what a service calls; the
 * Redis adapters' plumbing is behind `adapterView(hk)` in `@hotkey/sdk/internal`). Counted from
 * its source with the TypeScript compiler API (test/support/class-members.ts).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { publicMembers } from '../support/class-members.ts';

/** The most public members HotKeyClient may declare. */
const MAX_MEMBERS = 22;

/** Adapter plumbing: reached through the adapter view, never on the client. */
const ADAPTER_ONLY = [
  'noteRead',
  'readJustAnswered',
  'readAnswered',
  'recentRead',
  'recentReadUsed',
  'uncachedLoad',
  'vouches',
  'isShared',
  'usePushCodec',
];

test('HotKeyClient declares at most 22 public members', () => {
  const members = publicMembers('sdk/src/client/client.ts', 'HotKeyClient');
  assert.ok(members.length <= MAX_MEMBERS, `${members.length} public members: ${members.join(', ')}`);
  for (const name of ADAPTER_ONLY) assert.not.ok(members.includes(name), `HotKeyClient.${name} is adapter plumbing`);
});

test('the count reads what a caller can name: no #private, private or protected member, no constructor', () => {
  const members = publicMembers('test/docs/client-members.fixture.ts', 'Sample');
  assert.equal(members, ['a', 'd', 'b', 'c']);
});

test.run();
