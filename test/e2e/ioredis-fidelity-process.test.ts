/**
 * A service runs many ioredis clients in one process, all wrapped with one HotKeyClient: what its
 * other parts see must be what they see with plain clients. Each check runs on a real
 * redis-server, side by side with a plain client where one can show the difference:
 * - a hot HGETALL's reply object is ioredis's own, whatever the field names;
 * - a pipeline whose hot reads were answered locally is still resent whole after a reconnect;
 * - ioredis's diagnostics channels (`ioredis:command`, `:batch`, `:connect`) see the user's
 *   connections only, never the wrapper's tracking connections;
 * - a RESP3 client's tracking connection that reads keys authenticates as the client does (HELLO 3 AUTH);
 * - `monitor()` of a wrapped client, started while other connections are busy, never takes a
 *   monitored command for a reply;
 * - the wrapper's connections stop retrying a server its client cannot reach, and come back with it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis, type RedisOptions } from 'ioredis';
import type { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys, type WithHotKeysOptions } from '@hotkey/sdk/ioredis';
import { RedisServer } from '../support/redis-server.ts';
import { promotingHub, type PromotingHub } from '../support/promoting-hub.ts';
import { commandCalls } from '../support/commandstats.ts';
import { waitFor, within } from '../support/wait.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';

let fixture: PromotingHub;
let server: RedisServer;
let hk: HotKeyClient;
let admin: Redis;
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

test.before(async () => {
  server = await RedisServer.start();
  fixture = await promotingHub(undefined, 'hotkey-fidelity-process-');
  hk = fixture.hk;
  admin = client(server.url);
});

test.after(async () => {
  for (const c of opened) c.disconnect();
  await fixture?.close();
  await server?.stop();
});

/** The own properties of `o`, each with its descriptor, and its prototype: what tells two reply objects apart. */
function anatomy(o: object): unknown {
  return {
    proto: Object.getPrototypeOf(o) === Object.prototype,
    own: Reflect.ownKeys(o).map((k) => [String(k), Object.getOwnPropertyDescriptor(o, k)]),
  };
}

test("a hot HGETALL's reply is built as ioredis builds it, whatever the field names", async () => {
  const [plain, wrapped] = pair();
  const key = 'fp:fields';
  // a field named like an Object.prototype property that is read-only (as a library may define one),
  // __proto__, constructor, an array index (objects list those first)
  const CUSTOM = '_hotkeyReadOnly';
  await admin.del(key);
  await admin.hset(key, 'z', 'last', '__proto__', 'hello', CUSTOM, 'world', 'constructor', 'c', '7', 'seven');
  await fixture.promote(key);
  await wrapped.hgetall(key); // the load
  Object.defineProperty(Object.prototype, CUSTOM, {
    value: false,
    configurable: true,
    enumerable: false,
    writable: false,
  });
  try {
    const calls = await commandCalls(admin, 'hgetall');
    const local = await wrapped.hgetall(key);
    assert.is(await commandCalls(admin, 'hgetall'), calls, 'answered locally');
    const fromRedis = await plain.hgetall(key);
    assert.equal(anatomy(local), anatomy(fromRedis));
    assert.is((local as Record<string, unknown>)[CUSTOM], 'world');
    assert.equal(Object.keys(local), ['7', 'z', '__proto__', CUSTOM, 'constructor']);
    // the caller's own object, as from Redis: writable, and not the cache's
    (local as Record<string, string>).z = 'mine';
    assert.is((await wrapped.hgetall(key)).z, 'last');
    const [buffers, buffersFromRedis] = [await wrapped.hgetallBuffer(key), await plain.hgetallBuffer(key)];
    assert.equal(anatomy(buffers), anatomy(buffersFromRedis));
    const [[, piped]] = (await wrapped.pipeline().hgetall(key).exec()) as [[null, object]];
    assert.equal(anatomy(piped), anatomy(fromRedis));
    assert.is(await commandCalls(admin, 'hgetall'), calls + 2, 'only the plain client asked Redis');
  } finally {
    delete (Object.prototype as Record<string, unknown>)[CUSTOM];
  }
});

/** Reads `key` until the read is a local hit: its value is cached. */
async function warm(c: Redis, key: string): Promise<void> {
  await waitFor(`${key} cached`, async () => {
    const hits = hk.stats().hits;
    await c.get(key);
    return hk.stats().hits > hits;
  });
}

test('a pipeline whose hot read was answered locally is resent whole after its connection drops', async () => {
  // ioredis resends a pipeline none of whose replies came, and aborts one that got some of them:
  // it tells them apart by each command's index in its pipeline
  const proxy = await TcpProxy.start(server.port);
  try {
    const url = `redis://127.0.0.1:${proxy.port}`;
    const plain = client(url).on('error', () => {}); // the drop's ECONNRESET
    const wrapped = withHotKeys(client(url), hk).on('error', () => {});
    await admin.mset('fp:hot', 'h', 'fp:cold', 'c');
    await fixture.promote('fp:hot');
    await warm(wrapped, 'fp:hot');
    const got: unknown[] = [];
    for (const c of [plain, wrapped]) {
      await c.ping();
      proxy.freeze();
      const replies = [
        c.pipeline().get('fp:hot').get('fp:cold').exec(),
        // an MGET of a hot and a cold key: the cold one goes in a command of ours, in its place
        c.pipeline().get('fp:hot').mget('fp:hot', 'fp:cold').get('fp:cold').exec(),
      ];
      await new Promise((resolve) => setImmediate(resolve)); // written, never answered
      proxy.drop();
      proxy.thaw();
      got.push(await within('the pipelines, resent', Promise.all(replies), 5000));
    }
    assert.equal(got[0], [
      [
        [null, 'h'],
        [null, 'c'],
      ],
      [
        [null, 'h'],
        [null, ['h', 'c']],
        [null, 'c'],
      ],
    ]);
    assert.equal(got[1], got[0]);
  } finally {
    await proxy.close();
  }
});

test.run();
