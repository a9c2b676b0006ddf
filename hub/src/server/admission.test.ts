import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connectionCap, HandshakePool, MIN_PENDING_AGE_MS, OriginPolicy } from './admission.ts';

test('origins: none is a Node client; the own page only where allowed; allow-list and * ', () => {
  const p = new OriginPolicy(['https://ops.example.com/']);
  assert.ok(p.allows(undefined, '127.0.0.1:7070', false), 'no Origin: not a browser');
  assert.ok(p.allows('http://127.0.0.1:7070', '127.0.0.1:7070', true), 'own page on /live');
  assert.not.ok(p.allows('http://127.0.0.1:7070', '127.0.0.1:7070', false), 'own page on /ws');
  assert.not.ok(p.allows('http://127.0.0.1:7071', '127.0.0.1:7070', true), 'another port');
  assert.not.ok(p.allows('null', '127.0.0.1:7070', true), 'a sandboxed page');
  assert.ok(p.allows('HTTPS://OPS.example.com', 'hub:1', false), 'allow-list, case and trailing slash aside');
  assert.not.ok(p.allows('https://evil.example', 'hub:1', true));
  assert.ok(new OriginPolicy(['*']).allows('https://any.example', 'hub:1', false));
});

test('handshake pool: per-address and total caps close the oldest, sparing young ones up to twice the cap', () => {
  const pool = new HandshakePool<string>(4, 2);
  let t = 0;
  assert.equal(pool.enter('a1', 'A', t), []);
  assert.equal(pool.enter('a2', 'A', t), []);
  // a3 over A's cap, but a1 is young and A is under twice its cap: kept for now
  assert.equal(pool.enter('a3', 'A', t), []);
  t += MIN_PENDING_AGE_MS;
  assert.equal(pool.enter('a4', 'A', t), ['a1', 'a2'], 'old enough: the oldest go down to the cap');
  assert.equal(pool.enter('b1', 'B', t), []);
  assert.equal(pool.enter('b2', 'B', t), []);
  t += MIN_PENDING_AGE_MS;
  assert.equal(pool.enter('c1', 'C', t), ['a3'], 'over the total: the oldest of all');
  pool.leave('a4');
  assert.is(pool.size, 3);
  assert.not.ok(pool.has('a4'));
});

test('the connection cap follows the descriptor limit unless set', () => {
  assert.is(connectionCap({ maxConnections: 500 }, 20_000), 500);
  assert.is(connectionCap({ maxConnections: 0 }, 1024), 896);
});

test.run();
