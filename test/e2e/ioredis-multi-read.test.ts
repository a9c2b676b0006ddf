/**
 * Multi-key reads through `withHotKeys` on a real redis-server (sdk/src/ioredis/multi-read.ts):
 * MGET, HMGET, Buffer replies and a pipeline's reads answer hot cached keys locally and send the
 * rest in one command; every reply equals a plain client's. What reaches Redis is read from
 * MONITOR, filtered to the wrapped client's own connection (tracking connections are apart).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis, type RedisOptions } from 'ioredis';
import type { WithHotKeysOptions } from '@hotkey/sdk/ioredis';
import { hubInProcess } from '../support/e2e.ts';
import { RedisServer } from '../support/redis-server.ts';
import { promoteOn, wrappedReaders, type Reader } from '../support/staleness.ts';
import { delay, waitFor, within } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: {
        rules: [
          { match: 'cnt:*', threshold: 1_000_000, kind: 'write', shards: 4, cache: false, hotMs: 600_000 },
          { match: '*', threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs: 600_000 },
        ],
      },
    },
  },
});

let server: RedisServer;
const opened: Redis[] = [];
let plain: Redis;
let monitor: Redis;
/** commands Redis executed, by the client address that sent them */
const seen: { source: string; args: string[] }[] = [];

function redis(options: RedisOptions = {}): Redis {
  const c = new Redis(server.url, { maxRetriesPerRequest: 1, ...options });
  opened.push(c);
  return c;
}

const readers = (n: number, wrap: WithHotKeysOptions = {}, options: RedisOptions = {}): Promise<Reader<Redis>[]> =>
  wrappedReaders(e2e, n, () => redis(options), wrap);

async function ready(c: Redis): Promise<void> {
  if (c.status !== 'ready') await within('client ready', new Promise((resolve) => c.once('ready', resolve)), 3000);
}

let marks = 0;
/** The commands (lower-case name and args) Redis got from `c`'s own connection while `fn` ran. */
async function sentBy<T>(c: Redis, fn: () => Promise<T>): Promise<{ result: T; sent: string[][] }> {
  await ready(c);
  const source = `127.0.0.1:${(c.stream as { localPort: number }).localPort}`;
  const from = seen.length;
  const result = await fn();
  const mark = `mark-${++marks}`;
  await c.echo(mark); // MONITOR shows commands in order: once the mark is there, so is all before it
  await waitFor(`${mark} seen by MONITOR`, () => seen.slice(from).some((s) => s.args[1] === mark), 3000, 1);
  const sent = seen
    .slice(from)
    .filter((s) => s.source === source)
    .map((s) => [s.args[0]!.toLowerCase(), ...s.args.slice(1)]);
  return {
    result,
    sent: sent.slice(
      0,
      sent.findIndex((s) => s[1] === mark),
    ),
  };
}

test.before(async () => {
  server = await RedisServer.start();
  plain = redis();
  monitor = await plain.monitor();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    seen.push({ source, args });
  });
});

test.after(async () => {
  monitor?.disconnect();
  for (const c of opened) c.disconnect();
  await delay(20);
  await server?.stop();
});

/** Commands Redis executed so far, on every connection (INFO itself left out). */
async function executed(): Promise<number> {
  let n = 0;
  for (const m of (await plain.info('commandstats')).matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm))
    if (m[1] !== 'info') n += Number(m[2]);
  return n;
}

/** Runs `read` until it sends Redis nothing: cached, under a live tracking session if tracking is on. */
async function servedLocally(label: string, read: () => Promise<unknown>): Promise<void> {
  await waitFor(
    `${label} served locally`,
    async () => {
      await read();
      const before = await executed();
      await read();
      return (await executed()) === before;
    },
    3000,
    5,
  );
}

/** `keys` promoted on `group` and read until each instance serves them from its cache. */
async function hotAndCached(group: readonly Reader<Redis>[], keys: readonly string[]): Promise<void> {
  for (const key of keys) {
    await promoteOn(e2e, key, group);
    for (const r of group) await servedLocally(key, () => r.redis.get(key));
  }
}

test('mget: hot cached keys answered locally, one MGET of the misses, replies in order', async () => {
  const [r] = await readers(1);
  await plain.mset({ 'm:h1': 'one', 'm:h2': 'two', 'm:c1': 'cold', 'm:hn': 'x' });
  await plain.del('m:hn'); // a hot key missing in Redis: its null is cached too
  await hotAndCached([r!], ['m:h1', 'm:h2', 'm:hn']);
  const keys = ['m:c1', 'm:h1', 'm:missing', 'm:h2', 'm:hn', 'm:h1'];
  const expected = await plain.mget(keys);
  assert.equal(expected, ['cold', 'one', null, 'two', null, 'one']);
  const { result, sent } = await sentBy(r!.redis, () => r!.redis.mget(keys));
  assert.equal(result, expected);
  assert.equal(sent, [['mget', 'm:c1', 'm:missing']]);
  // every key hot and cached: nothing is sent
  const all = await sentBy(r!.redis, () => r!.redis.mget('m:h2', 'm:h1', 'm:hn'));
  assert.equal(all.result, ['two', 'one', null]);
  assert.equal(all.sent, []);
  // all cold: the caller's command as it is
  const cold = await sentBy(r!.redis, () => r!.redis.mget(['m:c1', 'm:missing']));
  assert.equal(cold.result, ['cold', null]);
  assert.equal(cold.sent, [['mget', 'm:c1', 'm:missing']]);
});

test('mget: a hot key holding a hash is null, as MGET says; callbacks get the same reply', async () => {
  const [r] = await readers(1);
  await plain.set('t:s', 'str');
  await plain.hset('t:h', { f: 'v' });
  await hotAndCached([r!], ['t:s']);
  await promoteOn(e2e, 't:h', [r!]);
  await servedLocally('t:h', () => r!.redis.hgetall('t:h'));
  const expected = await plain.mget('t:h', 't:s', 't:none');
  assert.equal(await r!.redis.mget('t:h', 't:s', 't:none'), expected);
  const viaCallback = await new Promise((resolve, reject) =>
    r!.redis.mget('t:s', 't:none', (err, value) => (err ? reject(err) : resolve(value))),
  );
  assert.equal(viaCallback, ['str', null]);
});

test('mget: a write through another wrapped instance is seen once it settled', async () => {
  const [a, b] = await readers(2);
  await plain.mset({ 'w:1': 'v1', 'w:2': 'v2' });
  await hotAndCached([a!, b!], ['w:1', 'w:2']);
  assert.equal(await b!.redis.mget('w:1', 'w:2'), ['v1', 'v2']);
  await a!.redis.set('w:1', 'new'); // settles after every instance dropped it
  assert.equal(await b!.redis.mget('w:1', 'w:2'), ['new', 'v2']);
  assert.equal(await b!.redis.mgetBuffer('w:1', 'w:2'), [Buffer.from('new'), Buffer.from('v2')]);
});

test('mget with a keyPrefix and on another database: each its own values', async () => {
  const group = await readers(1);
  const hk = group[0]!.hk;
  const { withHotKeys } = await import('@hotkey/sdk/ioredis');
  const prefixed = withHotKeys(redis({ keyPrefix: 'p:' }), hk);
  const db1 = withHotKeys(redis({ db: 1 }), hk);
  const plain1 = redis({ db: 1 });
  await plain.mset({ 'p:a': 'pa', a: 'a0', 'p:b': 'pb' });
  await plain1.mset({ a: 'a1', 'p:a': 'pa1' });
  await hotAndCached(group, ['a', 'p:a']); // cached from db 0 by the unprefixed client
  const viaPrefix = await sentBy(prefixed, () => prefixed.mget('a', 'b'));
  assert.equal(viaPrefix.result, ['pa', 'pb']);
  assert.equal(viaPrefix.sent, [['mget', 'p:b']]);
  // db 1's client never gets db 0's cached values
  assert.equal(await db1.mget('a', 'p:a', 'zz'), await plain1.mget('a', 'p:a', 'zz'));
  assert.equal(await db1.mget('a', 'p:a'), ['a1', 'pa1']);
});

test('hmget and Buffer replies: typed like a plain client, copies, exact bytes', async () => {
  const [r] = await readers(1);
  const binary = Buffer.from([0xff, 0xfe, 0x00, 0x41]); // not UTF-8
  await plain.set('b:s', 'héllo');
  await plain.set('b:bin', binary);
  await plain.hset('b:h', { name: 'ann', city: 'oslo' });
  await hotAndCached([r!], ['b:s', 'b:bin']);
  await promoteOn(e2e, 'b:h', [r!]);
  await servedLocally('b:h', () => r!.redis.hgetall('b:h'));
  const c = r!.redis;
  const hm = await sentBy(c, () => c.hmget('b:h', 'city', 'nope', 'name'));
  assert.equal(hm.result, ['oslo', null, 'ann']);
  assert.equal(hm.sent, []);
  const buffers = await sentBy(c, async () => ({
    get: await c.getBuffer('b:s'),
    mget: await c.mgetBuffer('b:s', 'b:none'),
    hget: await c.hgetBuffer('b:h', 'name'),
    hmget: await c.hmgetBuffer('b:h', 'name', 'nope'),
    hgetall: await c.hgetallBuffer('b:h'),
  }));
  assert.equal(buffers.result, {
    get: await plain.getBuffer('b:s'),
    mget: await plain.mgetBuffer('b:s', 'b:none'),
    hget: await plain.hgetBuffer('b:h', 'name'),
    hmget: await plain.hmgetBuffer('b:h', 'name', 'nope'),
    hgetall: await plain.hgetallBuffer('b:h'),
  });
  assert.ok(Buffer.isBuffer(buffers.result.get) && Buffer.isBuffer(buffers.result.hget));
  assert.equal(buffers.sent, [['mget', 'b:none']]);
  // a caller that mutates its Buffer changes nobody else's
  buffers.result.get!.fill(0);
  assert.equal(await c.getBuffer('b:s'), Buffer.from('héllo'));
  assert.is(await c.get('b:s'), 'héllo');
  // bytes that are not UTF-8: the cached string cannot say them, Redis does
  const bin = await sentBy(c, () => c.getBuffer('b:bin'));
  assert.ok(bin.result!.equals(binary));
  assert.equal(bin.sent.length, 1);
  assert.ok((await c.mgetBuffer('b:s', 'b:bin'))[1]!.equals(binary));
});

test('mget of a sharded counter sums its shards, as its GET does', async () => {
  const [r] = await readers(1, { tracking: false });
  const { hotKeyStats } = await import('@hotkey/sdk/ioredis');
  await plain.set('cnt:1', '10');
  await plain.set('n:1', 'x');
  await hotAndCached([r!], ['n:1']);
  await promoteOn(e2e, 'cnt:1', [r!]);
  assert.is(r!.hk.hotKind('cnt:1'), 'write');
  for (let i = 0; i < 20; i++) await r!.redis.incrby('cnt:1', 2);
  await waitFor('cnt:1 sharded', () => hotKeyStats(r!.redis).writeHot.sharded === 1, 2000);
  assert.ok(Number(await plain.get('cnt:1')) < 50, 'increments went to the shards');
  assert.is(await r!.redis.get('cnt:1'), '50');
  assert.equal(await r!.redis.mget('n:1', 'cnt:1', 'n:none'), ['x', '50', null]);
  assert.equal(await r!.redis.mgetBuffer('cnt:1'), [Buffer.from('50')]);
});

test('pipeline: hot cached GETs answered locally, the rest sent, exec() in order with [err, value]', async () => {
  const [r] = await readers(1);
  await plain.mset({ 'q:h1': 'one', 'q:h2': 'two', 'q:c': 'cold' });
  await plain.hset('q:hash', { f: 'v' });
  await hotAndCached([r!], ['q:h1', 'q:h2']);
  await promoteOn(e2e, 'q:hash', [r!]);
  await servedLocally('q:hash', () => r!.redis.hgetall('q:hash'));
  const build = (c: Redis) =>
    c
      .pipeline()
      .get('q:h1')
      .get('q:c')
      .hget('q:hash', 'f')
      .mget('q:h2', 'q:c')
      .set('q:h2', 'written')
      .get('q:h2') // written earlier in this pipeline: it must see the write
      .incr('q:c') // an error inside the pipeline keeps its [err] slot
      .get('q:h1');
  const expected = await build(redis()).exec();
  await plain.mset({ 'q:h2': 'two', 'q:c': 'cold' });
  await r!.redis.set('q:h2', 'two'); // through the wrapper, so that its cache drops it
  await servedLocally('q:h2', () => r!.redis.get('q:h2'));
  const { result, sent } = await sentBy(r!.redis, () => build(r!.redis).exec());
  assert.is(result!.length, expected!.length);
  result!.forEach(([err, value], i) => {
    assert.equal(value, expected![i]![1], `reply ${i}`);
    assert.is(String(err), String(expected![i]![0]), `error ${i}`);
  });
  assert.equal(
    sent.map((s) => s.join(' ')),
    ['get q:c', 'mget q:c', 'set q:h2 written', 'get q:h2', 'incr q:c'],
  );
  // only hot hits: nothing is sent, exec() still settles
  const hits = await sentBy(r!.redis, () => r!.redis.pipeline().get('q:h1').hgetall('q:hash').exec());
  assert.equal(hits.result, [
    [null, 'one'],
    [null, { f: 'v' }],
  ]);
  assert.equal(hits.sent, []);
});

test('pipeline: a hot key not cached yet loads apart, after the batch (tracking off: the load is on this connection)', async () => {
  const [r] = await readers(1, { tracking: false });
  await plain.mset({ 'u:c1': 'c1', 'u:h': 'hot', 'u:c2': 'c2', 'u:b': 'buf' });
  await promoteOn(e2e, 'u:h', [r!]);
  await promoteOn(e2e, 'u:b', [r!]);
  const build = (c: Redis) =>
    c.pipeline().get('u:c1').get('u:h').getBuffer('u:b').mget('u:c2', 'u:h').get('u:c2').exec();
  const expected = await build(redis());
  const { result, sent } = await sentBy(r!.redis, () => build(r!.redis));
  assert.equal(result, expected);
  // the loads (GET + PTTL) follow the pipeline's own commands
  assert.equal(
    sent.slice(0, 3).map((s) => s.join(' ')),
    ['get u:c1', 'mget u:c2', 'get u:c2'],
  );
  assert.equal(await build(r!.redis), expected); // and now from the cache
});

test('enableAutoPipelining: hot cached HGET, MGET and getBuffer answered locally, the rest batched', async () => {
  const [r] = await readers(1, {}, { enableAutoPipelining: true });
  await plain.hset('ap:h', { f: 'v' });
  await plain.mset({ 'ap:s': 's', 'ap:c': 'c' });
  await promoteOn(e2e, 'ap:h', [r!]);
  await hotAndCached([r!], ['ap:s']);
  await servedLocally('ap:h', () => r!.redis.hgetall('ap:h'));
  const c = r!.redis;
  const { result, sent } = await sentBy(c, () =>
    Promise.all([c.hget('ap:h', 'f'), c.mget('ap:s', 'ap:c'), c.getBuffer('ap:s'), c.get('ap:c')]),
  );
  assert.equal(result, ['v', ['s', 'c'], Buffer.from('s'), 'c']);
  assert.equal(
    sent.map((s) => s.join(' ')),
    ['mget ap:c', 'get ap:c'],
  );
});

test('multi(): never answered locally, it reads the transaction’s own snapshot', async () => {
  const [r] = await readers(1);
  await plain.set('x:k', 'old');
  await hotAndCached([r!], ['x:k']);
  const { result, sent } = await sentBy(r!.redis, () =>
    r!.redis.multi().get('x:k').set('x:k', 'new').get('x:k').mget('x:k').exec(),
  );
  assert.equal(result, [
    [null, 'old'],
    [null, 'OK'],
    [null, 'new'],
    [null, ['new']],
  ]);
  assert.equal(
    sent.map((s) => s[0]),
    ['multi', 'get', 'set', 'get', 'mget', 'exec'],
  );
  // multi({ pipeline: false }): the reads go to Redis (QUEUED) as well
  await r!.redis.set('x:k', 'v2');
  await servedLocally('x:k', () => r!.redis.get('x:k'));
  const transaction = async (c: Redis) => {
    await c.multi({ pipeline: false });
    const got = await Promise.all([c.get('x:k'), c.mget('x:k'), c.getBuffer('x:k'), c.hmget('x:k', 'f')]);
    return { got, exec: await c.exec() };
  };
  const expected = await transaction(redis());
  const queued = await sentBy(r!.redis, () => transaction(r!.redis));
  assert.equal(
    queued.sent.map((s) => s[0]),
    ['multi', 'get', 'mget', 'get', 'hmget', 'exec'],
  );
  assert.equal(queued.result.got, ['QUEUED', 'QUEUED', Buffer.from('QUEUED'), 'QUEUED']);
  assert.equal(queued.result.got, expected.got);
  assert.equal(queued.result.exec!.slice(0, 3), expected.exec!.slice(0, 3));
  assert.equal(queued.result.exec![0], [null, 'v2']);
  assert.match(String(queued.result.exec![3]![0]), /WRONGTYPE/);
});

test('tracking down: multi-key reads serve no value read under the lost session', async () => {
  const [r] = await readers(1);
  await plain.set('k:k', 'v0');
  await plain.set('k:other', 'o');
  await hotAndCached([r!], ['k:k', 'k:other']);
  assert.equal(await r!.redis.mget('k:k', 'k:other'), ['v0', 'o']);
  const list = (await plain.client('LIST')) as string;
  const victims = list
    .split('\n')
    .filter((line) => line.includes(' name=hotkey-invalidations '))
    .map((line) => /(?:^|\s)id=(\d+)/.exec(line)![1]!);
  assert.ok(victims.length > 0);
  // kept down while we write: Redis refuses new connections while maxclients is reached
  const connected = Number(/^connected_clients:(\d+)/m.exec(await plain.info('clients'))![1]);
  await plain.config('SET', 'maxclients', String(connected - victims.length));
  try {
    for (const id of victims) await plain.client('KILL', 'ID', id);
    for (let i = 1; i <= 10; i++) {
      const v = `down-${i}`;
      await plain.set('k:k', v); // nobody can tell the wrapper now
      assert.equal(await r!.redis.mget('k:other', 'k:k'), ['o', v], `mget ${i}`);
      assert.equal(await r!.redis.mgetBuffer('k:k'), [Buffer.from(v)], `mgetBuffer ${i}`);
      assert.equal(await r!.redis.getBuffer('k:k'), Buffer.from(v), `getBuffer ${i}`);
      assert.equal(await r!.redis.pipeline().get('k:k').exec(), [[null, v]], `pipeline ${i}`);
    }
  } finally {
    await plain.config('SET', 'maxclients', '10000');
  }
});

test.run();
