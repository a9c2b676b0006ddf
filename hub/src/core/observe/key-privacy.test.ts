import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHmac } from 'node:crypto';
import type { HubEvent } from '../coordinator.ts';
import { HASH_HEX_DIGITS, KeyPrivacy, REDACTED_MARK } from './key-privacy.ts';

const SECRET = 'unit-test-secret-0123';
/** the documented recipe, computed here apart from the module */
const hmac = (secret: string, app: string, key: string) =>
  createHmac('sha256', secret).update(`${app}\u0000${key}`).digest('hex').slice(0, HASH_HEX_DIGITS);

test('plain apps and apps not configured keep their keys', () => {
  const p = new KeyPrivacy(SECRET, { shop: { keys: 'plain' } });
  assert.is(p.show('shop', 'session:a@b.c'), 'session:a@b.c');
  assert.is(p.show('other', 'x'), 'x');
  assert.is(p.mode('other'), 'plain');
  assert.is(new KeyPrivacy().show('shop', 'k'), 'k');
});

test('hash: the longest kept prefix, then h: and a keyed HMAC-SHA256; stable, per app and per secret', () => {
  const p = new KeyPrivacy(SECRET, { shop: { keys: 'hash', keepPrefix: ['session:', 'session:admin:'] } });
  const key = 'session:alice@example.com';
  assert.is(p.show('shop', key), `session:h:${hmac(SECRET, 'shop', key)}`);
  assert.is(p.show('shop', key), p.show('shop', key), 'the same key is the same name (cached or not)');
  assert.is(p.show('shop', 'session:admin:root'), `session:admin:h:${hmac(SECRET, 'shop', 'session:admin:root')}`);
  assert.is(p.show('shop', 'cart:42'), `h:${hmac(SECRET, 'shop', 'cart:42')}`, 'no prefix matches: none kept');
  assert.is.not(p.show('shop', 'session:bob'), p.show('shop', key));
  const other = new KeyPrivacy('another-secret-4567', { shop: { keys: 'hash', keepPrefix: ['session:'] } });
  assert.is.not(other.show('shop', key), p.show('shop', key), 'the secret keys the hash');
  assert.is(p.show('shop', key).includes('alice'), false);
});

test('redact: the prefix and a fixed marker', () => {
  const p = new KeyPrivacy(undefined, { blog: { keys: 'redact', keepPrefix: ['user:'] } });
  assert.is(p.show('blog', 'user:42'), `user:${REDACTED_MARK}`);
  assert.is(p.show('blog', 'post:9'), REDACTED_MARK);
  assert.is(p.mode('blog'), 'redact');
});

test('events leave with the key as shown; plain apps keep the same object', () => {
  const p = new KeyPrivacy(SECRET, { shop: { keys: 'hash' } });
  const e: HubEvent = { type: 'promote', app: 'shop', key: 'session:x', qps: 5, at: 1, hub: 'h' };
  const shown = p.event(e);
  assert.equal(shown, { ...e, key: `h:${hmac(SECRET, 'shop', 'session:x')}` });
  assert.is(e.key, 'session:x', 'the original event is untouched');
  const plain: HubEvent = { ...e, app: 'blog' };
  assert.is(p.event(plain), plain);
});

test('hash without a secret is refused, and a refused configure changes nothing', () => {
  assert.throws(() => new KeyPrivacy(undefined, { shop: { keys: 'hash' } }), /secret/);
  const p = new KeyPrivacy(SECRET, { shop: { keys: 'hash' } });
  const before = p.show('shop', 'k');
  assert.throws(() => p.configure('', { shop: { keys: 'hash' } }), /secret/);
  assert.is(p.show('shop', 'k'), before);
  p.configure(SECRET, {});
  assert.is(p.show('shop', 'k'), 'k', 'a reload to plain shows keys again (cache dropped)');
});

test('past the cache of shown names (it is recycled) keys still get their right names', () => {
  const p = new KeyPrivacy(SECRET, { shop: { keys: 'hash' } });
  for (let i = 0; i < 25_000; i++) p.show('shop', `k${i}`);
  assert.is(p.show('shop', 'k3'), `h:${hmac(SECRET, 'shop', 'k3')}`);
});

test.run();
