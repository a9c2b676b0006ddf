/**
 * The wrapped ioredis client is indistinguishable from a plain one except that hot reads are
 * local: a real hub process, a real redis-server, and every check made side by side on a plain
 * client and a wrapped one (same calls, same observable results). Then instrumentation the way
 * sinon and OpenTelemetry do it, reply order across callback and promise styles, and key identity
 * (prefixes, databases, servers under one HotKeyClient).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EventEmitter } from 'node:events';
import { Redis, type RedisOptions } from 'ioredis';
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys, type WithHotKeysOptions } from '@hotkey/sdk/ioredis';
import { RedisServer } from '../support/redis-server.ts';
import { promotingHub, type PromotingHub } from '../support/promoting-hub.ts';

let fixture: PromotingHub;
let server: RedisServer;
let server2: RedisServer;
let hk: HotKeyClient;
const opened: Redis[] = [];

function client(url: string, options: RedisOptions = {}): Redis {
  const c = new Redis(url, { maxRetriesPerRequest: 1, ...options });
  opened.push(c);
  return c;
}
/** A plain client and a wrapped one with the same options. */
function pair(options: RedisOptions = {}, wrap: WithHotKeysOptions = {}): [Redis, Redis] {
  return [client(server.url, options), withHotKeys(client(server.url, options), hk, wrap)];
}
/**
 * Tracking off: a test that writes behind the wrapper's back to prove a read was answered
 * locally, or that counts the commands a load sends on the client (with tracking on, a hot load
 * goes over the wrapper's own tracking connection and Redis reports outside writes:
 * ioredis-tracking.test.ts).
 */
const UNTRACKED = { tracking: false } as const;

const promote = (key: string): Promise<void> => fixture.promote(key);

/** Runs `probe` on both clients and expects equal results. */
async function same<T>(what: string, plain: Redis, wrapped: Redis, probe: (c: Redis) => T | Promise<T>): Promise<T> {
  const [a, b] = [await probe(plain), await probe(wrapped)];
  assert.equal(b, a, what);
  return b;
}

test.before(async () => {
  [server, server2] = await Promise.all([RedisServer.start(), RedisServer.start()]);
  fixture = await promotingHub(undefined, 'hotkey-fidelity-');
  hk = fixture.hk;
});

test.after(async () => {
  for (const c of opened) c.disconnect();
  await fixture?.close();
  await Promise.all([server?.stop(), server2?.stop()]);
});

test("built-ins, instanceof, constructor, String(), enumeration, status and options are the client's own", async () => {
  const [plain, wrapped] = pair({ keyPrefix: 'fid:' });
  await Promise.all([plain.ping(), wrapped.ping()]);
  await same('hasOwnProperty', plain, wrapped, (c) =>
    ['status', 'options', 'sendCommand', 'get', 'duplicate'].map((p) => c.hasOwnProperty(p)),
  );
  await same('String()', plain, wrapped, (c) => [String(c), `${c}`, Object.prototype.toString.call(c), c.toString()]);
  await same('valueOf', plain, wrapped, (c) => c.valueOf() === c);
  await same('constructor / instanceof', plain, wrapped, (c) => [
    c.constructor === plain.constructor,
    c.constructor.name,
    c instanceof Redis,
    c instanceof EventEmitter,
  ]);
  await same('own keys', plain, wrapped, (c) => Object.keys(c).sort());
  await same('for-in keys', plain, wrapped, (c) => {
    const keys: string[] = [];
    for (const k in c) keys.push(k);
    return keys.sort();
  });
  await same('typeof methods', plain, wrapped, (c) =>
    ['get', 'set', 'on', 'once', 'pipeline', 'multi', 'call', 'sendCommand', 'duplicate'].map(
      (m) => typeof (c as any)[m],
    ),
  );
  await same('status', plain, wrapped, (c) => c.status);
  await same('options', plain, wrapped, (c) => [c.options.host, c.options.port, c.options.db, c.options.keyPrefix]);
  await same('JSON of options', plain, wrapped, (c) => Object.keys(c.options).sort());
});

test('events: chaining returns the client, listeners see it as this', async () => {
  const [plain, wrapped] = pair();
  await same('on/once/off chain', plain, wrapped, (c) => {
    const f = function (this: unknown) {};
    return [c.on('x', f) === c, c.once('y', f) === c, c.off('x', f) === c, c.removeAllListeners('y') === c];
  });
  await same('listener this', plain, wrapped, (c) => {
    let self: unknown;
    c.once('custom', function (this: unknown) {
      self = this;
    });
    c.emit('custom');
    return self === c;
  });
  await same('ready event on a lazy duplicate', plain, wrapped, async (c) => {
    const d = c.duplicate({ lazyConnect: true });
    opened.push(d);
    const seen: unknown[] = [];
    d.on('ready', function (this: unknown) {
      seen.push(this === d);
    });
    await d.connect();
    return [seen, d.status, d instanceof Redis, d.constructor === plain.constructor];
  });
});

test('commands: promise, callback, call(), pipeline, multi, errors give the same results', async () => {
  const [plain, wrapped] = pair();
  await plain.del('f:s', 'f:n', 'f:h');
  await same('set/get', plain, wrapped, async (c) => [
    await c.set('f:s', 'v'),
    await c.get('f:s'),
    await c.get('f:none'),
  ]);
  await same(
    'callback style',
    plain,
    wrapped,
    (c) => new Promise((resolve) => c.get('f:s', (err, v) => resolve([err, v]))),
  );
  await same('call()', plain, wrapped, async (c) => [await c.call('get', 'f:s'), await c.call('set', 'f:s', 'v')]);
  await same('hash', plain, wrapped, async (c) => {
    await c.del('f:h');
    return [await c.hset('f:h', { a: '1' }), await c.hgetall('f:h'), await c.hget('f:h', 'a')];
  });
  await same('pipeline', plain, wrapped, (c) => c.pipeline().set('f:n', '1').incr('f:n').get('f:n').exec());
  await same('multi', plain, wrapped, (c) => c.multi().set('f:n', '5').incr('f:n').get('f:n').exec());
  await same('error', plain, wrapped, async (c) => {
    const err = await c.incr('f:h').catch((e: Error) => e);
    return [err instanceof Error, (err as Error).message];
  });
  await same('getBuffer', plain, wrapped, async (c) => (await c.getBuffer('f:s'))?.toString('hex'));
});

test('hot reads are local on the wrapped client only; duplicate() is wrapped', async () => {
  const [plain, wrapped] = pair({}, UNTRACKED);
  await plain.set('hot:1', 'old');
  await promote('hot:1');
  assert.is(await wrapped.get('hot:1'), 'old'); // loads and caches
  await plain.set('hot:1', 'behind-our-back');
  assert.is(await plain.get('hot:1'), 'behind-our-back');
  assert.is(await wrapped.get('hot:1'), 'old', 'served locally');
  const dup = wrapped.duplicate();
  opened.push(dup);
  assert.is(await dup.get('hot:1'), 'old', 'the duplicate shares the cache');
  await dup.set('hot:1', 'new'); // and invalidates
  assert.is(await wrapped.get('hot:1'), 'new');
  const plainDup = plain.duplicate({ lazyConnect: true });
  assert.is(dup.constructor, plainDup.constructor);
  assert.ok(dup instanceof Redis);
  plainDup.disconnect();
});

test('showFriendlyErrorStack points at the caller, as plain ioredis does', async () => {
  const [plain, wrapped] = pair({ showFriendlyErrorStack: true });
  await plain.set('f:str', 'x');
  const frames = async (c: Redis) => {
    const err = (await c.hget('f:str', 'a').catch((e: Error) => e)) as Error;
    const first = err.stack!.split('\n').find((l) => l.trim().startsWith('at '));
    return [err.message, /ioredis-fidelity\.test\.ts/.test(first ?? ''), /sdk\/src\/ioredis/.test(err.stack!)];
  };
  const got = await same('stack', plain, wrapped, frames);
  assert.equal(got.slice(1), [true, false]);
});

// Writes through the wrapper settle after the hub acknowledged their invalidation
// (awaitInvalidation), so a later reply may overtake a write's: reads and other commands keep order.
test('reply order matches send order when callback and promise styles mix', async () => {
  const [plain, wrapped] = pair();
  await plain.mset('o:1', '1', 'o:2', '2', 'o:3', '3');
  await same('order', plain, wrapped, async (c) => {
    const order: string[] = [];
    const all: Promise<unknown>[] = [];
    all.push(c.get('o:1').then(() => order.push('p1')));
    all.push(new Promise<void>((r) => c.get('o:2', () => r(void order.push('c2')))));
    all.push(c.exists('o:x').then(() => order.push('p-exists')));
    all.push(c.get('o:3').then(() => order.push('p3')));
    all.push(new Promise<void>((r) => c.hget('o:h', 'f', () => r(void order.push('c4')))));
    all.push(c.get('o:1').then(() => order.push('p5')));
    await Promise.all(all);
    return order;
  });
});

test('instrumentation: a sinon-style spy and OpenTelemetry-style shimmer wrapping, no recursion', async () => {
  const [plain, wrapped] = pair({}, UNTRACKED);
  await plain.set('hot:spy', 'a');
  await promote('hot:spy');
  assert.is(await wrapped.get('hot:spy'), 'a');
  // sinon: obj.del = spy(obj.del), calling the original with the same this
  const spied: unknown[][] = [];
  const del = wrapped.del;
  (wrapped as any).del = function (this: Redis, ...args: unknown[]) {
    spied.push(args);
    return (del as any).apply(this, args);
  };
  assert.is(await wrapped.del('hot:spy'), 1);
  assert.equal(spied, [['hot:spy']]);
  assert.is(await wrapped.get('hot:spy'), null, 'the spied write still invalidated');
  // OpenTelemetry (shimmer): wrap sendCommand on the instance and on the class prototype
  const names: string[] = [];
  const protoNames: string[] = [];
  const original = wrapped.sendCommand;
  (wrapped as any).sendCommand = function (this: Redis, command: { name: string }, ...rest: unknown[]) {
    names.push(command.name);
    return (original as any).call(this, command, ...rest);
  };
  const protoOriginal = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (this: Redis, command: any, ...rest: any[]) {
    if (this === (wrapped as Redis)) protoNames.push(command.name);
    return (protoOriginal as any).call(this, command, ...rest);
  } as any;
  try {
    assert.is(await wrapped.set('hot:spy', 'b'), 'OK');
    assert.is(await wrapped.get('hot:spy'), 'b'); // loads, caches
    assert.is(await wrapped.get('hot:spy'), 'b'); // local
    assert.is(await wrapped.set('hot:spy', 'c'), 'OK');
    assert.is(await wrapped.get('hot:spy'), 'c');
    // a hot GET answered locally is no Redis command: neither sendCommand sees it; a hot load
    // sends its PTTL right behind the GET (the cached copy never outlives the key in Redis)
    assert.equal(
      names,
      ['set', 'get', 'pttl', 'set', 'get', 'pttl'],
      'every command sent seen once by the instance wrapper',
    );
    assert.equal(
      protoNames,
      ['set', 'get', 'pttl', 'set', 'get', 'pttl'],
      'only commands sent to Redis reach the class',
    );
  } finally {
    Redis.prototype.sendCommand = protoOriginal;
  }
});

test('key identity: prefixes, databases and servers never share a cached value', async () => {
  const plainA = client(server.url);
  const plainB = client(server2.url);
  await plainA.set('t1:k', 'tenant-1');
  await plainA.set('t2:k', 'tenant-2');
  await plainA.set('k', 'db0');
  await plainA.select(1);
  await plainA.set('k', 'db1');
  await plainB.set('k', 'server2');
  await promote('t1:k');
  await promote('t2:k');
  await promote('k');
  const t1 = withHotKeys(client(server.url, { keyPrefix: 't1:' }), hk);
  const t2 = withHotKeys(client(server.url, { keyPrefix: 't2:' }), hk);
  const db0 = withHotKeys(client(server.url), hk);
  const db1 = withHotKeys(client(server.url, { db: 1 }), hk);
  const other = withHotKeys(client(server2.url), hk);
  for (let round = 0; round < 3; round++) {
    assert.is(await t1.get('k'), 'tenant-1');
    assert.is(await t2.get('k'), 'tenant-2');
    assert.is(await db0.get('k'), 'db0');
    assert.is(await db1.get('k'), 'db1');
    assert.is(await other.get('k'), 'server2');
  }
  // SELECT moves a client to another namespace
  await db0.select(1);
  assert.is(await db0.get('k'), 'db1');
  assert.ok(hk.stats().hits > 0);
});

test.run();
