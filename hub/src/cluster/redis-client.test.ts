import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRedisClient, redactUrl, redisTlsOptions } from './redis-client.ts';

test('rediss:// gets TLS with the host as SNI; redis:// gets none', () => {
  assert.equal(redisTlsOptions('redis://10.0.0.9:6379'), {});
  assert.equal(redisTlsOptions('rediss://cache.example.com:6380/2'), { tls: { servername: 'cache.example.com' } });
  assert.equal(redisTlsOptions('REDISS://cache.example.com'), { tls: { servername: 'cache.example.com' } });
});

test('an IP address is not sent as SNI (node:tls refuses it) but is still verified', () => {
  assert.equal(redisTlsOptions('rediss://127.0.0.1:6380'), { tls: {} });
  assert.equal(redisTlsOptions('rediss://[::1]:6380'), { tls: {} });
});

test('the caller’s TLS options (a private CA) are passed through, for rediss:// only', () => {
  assert.equal(redisTlsOptions('rediss://:pw@r.example:6380', { ca: 'PEM', rejectUnauthorized: true }), {
    tls: { servername: 'r.example', ca: 'PEM', rejectUnauthorized: true },
  });
  assert.equal(redisTlsOptions('redis://r.example:6379', { ca: 'PEM' }), {});
});

test('the client built for a rediss:// URL carries those options', () => {
  const client = createRedisClient({ url: 'rediss://r.example:6380', name: 't', tls: { ca: 'PEM' } });
  assert.equal(client.options.tls, { servername: 'r.example', ca: 'PEM' });
  client.disconnect();
  const plain = createRedisClient({ url: 'redis://r.example:6379', name: 't' });
  assert.is(plain.options.tls, undefined);
  plain.disconnect();
});

test('passwords never reach a log line', () => {
  assert.is(redactUrl('rediss://user:s3cret@r.example:6380/0'), 'rediss://***@r.example:6380/0');
  assert.is(redactUrl('redis://r.example:6379'), 'redis://r.example:6379');
});

test.run();
