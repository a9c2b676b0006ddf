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
 * - the wrapper's connections stop retrying a server its client cannot reach, and come back with it;
 * - they stay quiet (no heartbeat) until their session vouched for a load.
 * Each stands for tests of ioredis's own functional suite (github.com/redis/ioredis, v6.0.0,
 * test/functional/) that failed with every client of one mocha process wrapped by one `hk`.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import dc from 'node:diagnostics_channel';
import { createServer, type Socket } from 'node:net';
import { once } from 'node:events';
import { Redis, type RedisOptions } from 'ioredis';
import type { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys, type WithHotKeysOptions } from '@hotkey/sdk/ioredis';
import { RedisServer } from '../support/redis-server.ts';
import { promotingHub, type PromotingHub } from '../support/promoting-hub.ts';
import { commandCalls } from '../support/commandstats.ts';
import { delay, waitFor, within } from '../support/wait.ts';
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

// hgetall.ts "should handle special field names"
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

// elasticache.ts "should resend intact pipelines"
test('a pipeline whose hot read was answered locally is resent whole after its connection drops', async () => {
  // ioredis resends a pipeline none of whose replies came, and aborts one that got some of them:
  // it tells them apart by each command's index in its pipeline
  const proxy = await TcpProxy.start(server.port);
  const url = `redis://127.0.0.1:${proxy.port}`;
  const plain = client(url).on('error', () => {}); // the drop's ECONNRESET
  const wrapped = withHotKeys(client(url), hk).on('error', () => {});
  try {
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
    plain.disconnect();
    wrapped.disconnect();
    await proxy.close();
  }
});

/** CLIENT LIST lines of the server, one object of fields per connection. */
async function clientList(): Promise<Record<string, string>[]> {
  const list = (await admin.client('LIST')) as string;
  return list
    .trim()
    .split('\n')
    .map((line) => Object.fromEntries(line.split(' ').map((field) => field.split('=', 2) as [string, string])));
}

// tracing.ts "ioredis:command should include database number" (it took a heartbeat PING of ours for its own)
test("ioredis's diagnostics channels see the user's connections only, never the wrapper's", async () => {
  // the user's client works in db 3, this test's admin client in db 0; the wrapper's connections
  // are duplicates of the user's (db 3)
  const wrapped = withHotKeys(client(server.url, { db: 3 }), hk, { tracking: { pingMs: 20 } });
  await wrapped.set('fp:traced', 'v1');
  await fixture.promote('fp:traced');
  await warm(wrapped, 'fp:traced'); // the tracking connections are up
  const seen: string[] = [];
  const subscribers = ['command', 'batch', 'connect'].map((kind) => {
    const channel = dc.tracingChannel(`ioredis:${kind}`);
    const subscriber = {
      start(context: { command?: string; database?: number }) {
        if (context.database !== 0) seen.push(`${kind} ${context.command ?? ''} db${context.database ?? '?'}`);
      },
      end() {},
      asyncStart() {},
      asyncEnd() {},
      error() {},
    };
    channel.subscribe(subscriber);
    return () => channel.unsubscribe(subscriber);
  });
  try {
    // a write, then a read that loads the value again (a transaction on the tracking connection)
    await wrapped.set('fp:traced', 'v2');
    await warm(wrapped, 'fp:traced');
    await delay(100); // heartbeats
    // the tracking connections killed: they connect and set tracking up again
    for (const c of await clientList())
      if (c.name?.startsWith('hotkey-')) await admin.client('KILL', 'ID', c.id!).catch(() => {});
    await wrapped.set('fp:traced', 'v3');
    await warm(wrapped, 'fp:traced');
    assert.is(await wrapped.get('fp:traced'), 'v3');
    await delay(100);
    assert.ok(seen.includes('command get db3') && seen.includes('command set db3'), "the user's commands are traced");
    assert.equal(
      // a load while tracking is down reads the key's PTTL on the user's connection, behind its GET
      [...new Set(seen)].filter((event) => !['command get db3', 'command set db3', 'command pttl db3'].includes(event)),
      [],
      'what the user sent',
    );
  } finally {
    for (const unsubscribe of subscribers) unsubscribe();
  }
});

// auth.ts "protocol 3 should resend hello auth after reconnect" (a GET of ours came after AUTH, not HELLO 3 AUTH)
test("a RESP3 client's tracking connection that reads its keys greets and authenticates as the client does", async () => {
  const secured = await RedisServer.start({ args: () => ['--requirepass', 'fp-pass'] });
  const url = `redis://:fp-pass@127.0.0.1:${secured.port}`;
  const owner = client(url);
  const wrapped = withHotKeys(client(url, { protocol: 3, connectionName: 'fp-user' }), hk);
  try {
    await owner.set('fp:auth', 'v');
    await fixture.promote('fp:auth');
    await warm(wrapped, 'fp:auth'); // loaded over the tracking connection
    const list = ((await owner.client('LIST')) as string).trim().split('\n');
    const resp = (name: string) => list.find((line) => line.includes(` name=${name} `))?.match(/ resp=(\d)/)?.[1];
    assert.is(resp('fp-user'), '3');
    assert.is(resp('hotkey-tracking'), '3', 'HELLO 3 AUTH, as the RESP3 client');
    // the invalidation channel's stays RESP2: ioredis drops a RESP3 redirect target's pushes
    assert.is(resp('hotkey-invalidations'), '2');
  } finally {
    wrapped.disconnect();
    owner.disconnect();
    await secured.stop();
  }
});

// pipeline.ts "exec should reload scripts on redis restart (reconnect)" ("Command queue state error")
test("monitor() of a wrapped client while the wrapper's connections are busy: no monitored command taken for a reply", async () => {
  // neighbours whose tracking connections ping every 2 ms: monitored PINGs come in the same read as MONITOR's reply
  // (their heartbeat runs once they loaded a hot key)
  const busy = [0, 1].map(() => withHotKeys(client(server.url), hk, { tracking: { pingMs: 2 } }));
  await admin.set('fp:busy', 'b');
  await fixture.promote('fp:busy');
  for (const b of busy) await warm(b, 'fp:busy');
  const wrapped = withHotKeys(client(server.url), hk);
  const errors: string[] = [];
  let lines = 0;
  try {
    for (let i = 0; i < 20; i++) {
      // what monitor() makes and resolves once it is 'monitoring', with its errors heard from the start
      const monitor = wrapped.duplicate({ monitor: true });
      opened.push(monitor);
      monitor.on('error', (e: Error) => errors.push(e.message)).on('monitor', () => lines++);
      await once(monitor, 'monitoring', { signal: AbortSignal.timeout(3000) });
      await delay(5);
      monitor.disconnect();
    }
    assert.ok(lines > 0, 'the busy connections were monitored');
    assert.equal(errors, []);
    const monitor = await within('monitor()', wrapped.monitor(), 3000);
    assert.is(monitor.status, 'monitoring');
    monitor.disconnect();
  } finally {
    for (const b of busy) b.disconnect();
  }
});

// connection.ts "connectTimeout should ignore timeout if connect" (a reconnect of ours set a socket timeout),
// and tests whose mock server on a reused port heard connections of ours left from earlier tests
test("the wrapper's connections do not call a server their client cannot reach, and come back with it", async () => {
  const node = await RedisServer.start();
  const wrapped = withHotKeys(client(node.url), hk).on('error', () => {});
  await wrapped.set('fp:gone', 'v');
  await fixture.promote('fp:gone');
  await warm(wrapped, 'fp:gone'); // tracking connections up
  await node.stop();
  await delay(300); // every connection to it closed
  // whatever listens on its port later hears who calls
  const heard: string[] = [];
  const sockets = new Set<Socket>();
  const squatter = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', (data) => heard.push(data.toString())).on('error', () => {});
  });
  squatter.listen(node.port, '127.0.0.1');
  await once(squatter, 'listening');
  try {
    await delay(1500);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => squatter.close(resolve));
  }
  assert.ok(heard.length > 0, 'the client itself tried again (ioredis retries)');
  assert.not.ok(heard.join('').includes('hotkey-'), 'no connection of ours called');
  // back: the client connects again, and tracking with its next read, as with its first
  await node.restart();
  const probe = client(node.url);
  const ours = async () =>
    ((await probe.client('LIST')) as string).split('\n').filter((line) => / name=hotkey-/.test(line)).length;
  try {
    await waitFor('ready again', () => wrapped.status === 'ready', 10_000);
    await delay(200);
    assert.is(await ours(), 0, 'none before it reads');
    await warm(wrapped, 'fp:gone');
    assert.ok((await ours()) >= 2);
  } finally {
    wrapped.disconnect();
    probe.disconnect();
    await node.stop();
  }
});

// pipeline.ts and scripting.ts tests that take the first commands MONITOR shows for theirs
test("the wrapper's connections stay quiet until their session vouched for a load: no heartbeat for a client of cold reads", async () => {
  const own = await RedisServer.start(); // no other client of the process pings it
  const wrapped = withHotKeys(client(own.url), hk, { tracking: { pingMs: 20 } });
  const probe = client(own.url);
  try {
    await probe.set('fp:quiet', 'q');
    assert.is(await wrapped.get('fp:cold'), null); // opens the tracking connections
    await waitFor('the tracking connections', async () =>
      ((await probe.client('LIST')) as string).includes(' name=hotkey-tracking '),
    );
    await delay(200); // ten heartbeat periods
    assert.is(await commandCalls(probe, 'ping'), 0, 'no PING: nothing cached under the session');
    await fixture.promote('fp:quiet');
    await warm(wrapped, 'fp:quiet'); // a load under the session: the heartbeat runs
    await waitFor('heartbeats', async () => (await commandCalls(probe, 'ping')) > 0);
  } finally {
    wrapped.disconnect();
    probe.disconnect();
    await own.stop();
  }
});

test.run();
