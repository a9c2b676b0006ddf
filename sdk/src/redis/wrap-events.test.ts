import { test } from 'uvu';
import * as assert from 'uvu/assert';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { HotKeyClient } from '../client/client.ts';
import { withHotKeys } from '../ioredis.ts';
import { withHotKeys as withNodeRedis } from '../node-redis.ts';
import { delay, waitFor } from '../../../test/support/wait.ts';
import { type AckingPeer, startAckingPeer } from './acking-peer.test-helper.ts';
import { WrapEvents, type WrapMember } from './wrap-events.ts';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

let fx: AckingPeer;
let hk: HotKeyClient;
let raw: Redis;

test.before(async () => {
  fx = await startAckingPeer();
  hk = fx.hk;
  raw = new Redis(fx.server.url, { maxRetriesPerRequest: 1 });
});

test.after(async () => {
  raw?.disconnect();
  await fx?.close();
});

const EVENTS = ['promote', 'demote', 'invalidate', 'close'] as const;
function listeners(on: HotKeyClient): Record<string, number> {
  return Object.fromEntries(EVENTS.map((e) => [e, on.listenerCount(e)]));
}

/** MaxListenersExceededWarning messages emitted while `run` runs (and a turn after: warnings are emitted on the next tick). */
async function leakWarnings(run: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const onWarning = (w: Error) => {
    if (w.name === 'MaxListenersExceededWarning') seen.push(w.message);
  };
  process.on('warning', onWarning);
  try {
    await run();
    await delay(10);
  } finally {
    process.off('warning', onWarning);
  }
  return seen;
}

/** Our connections on the test's redis-server (tracking readers and invalidation subscribers). */
async function ownConnections(): Promise<number> {
  const list = (await raw.client('LIST')) as string;
  return list.split('\n').filter((l) => / name=hotkey-(tracking|invalidations) /.test(l)).length;
}

/** A part of a wrap that writes down what it heard. */
function recorder(): WrapMember & { heard: string[] } {
  const heard: string[] = [];
  return {
    heard,
    promoted: (key) => heard.push(`promote ${key}`),
    demoted: (key) => heard.push(`demote ${key}`),
    hkClosed: () => heard.push('close'),
  };
}

test('twenty ioredis clients and their duplicates on one hk: one listener per event, no MaxListenersExceededWarning, all gone at quit', async () => {
  const registry = WrapEvents.of(hk);
  const baseline = registry.size;
  const clients: Redis[] = [];
  let afterOne: Record<string, number> = {};
  const warnings = await leakWarnings(async () => {
    for (let i = 0; i < 20; i++) {
      const c = withHotKeys(new Redis(fx.server.url, { maxRetriesPerRequest: 1 }), hk);
      if (i === 0) afterOne = listeners(hk);
      clients.push(c, c.duplicate());
    }
    // each client's first read opens its tracking connections
    await Promise.all(clients.map((c, i) => c.get(`cold:${i}`)));
  });
  assert.equal(warnings, []);
  assert.equal(listeners(hk), afterOne, 'a wrap adds no listener on hk');
  assert.is(registry.size, baseline + 40);
  await waitFor('every tracking connection up', async () => (await ownConnections()) === 80);
  await Promise.all(clients.map((c) => c.quit()));
  await waitFor('every wrap left', () => registry.size === baseline);
  assert.equal(listeners(hk), afterOne);
  await waitFor('their tracking connections closed', async () => (await ownConnections()) === 0);
});

test('twenty node-redis clients on one hk: one listener per event, no MaxListenersExceededWarning, all gone at quit', async () => {
  const registry = WrapEvents.of(hk);
  const baseline = registry.size;
  const before = listeners(hk);
  const clients: Array<{ quit(): Promise<unknown>; get(key: string): Promise<unknown> }> = [];
  const warnings = await leakWarnings(async () => {
    for (let i = 0; i < 20; i++) {
      const c = withNodeRedis(createClient({ url: fx.server.url }), hk);
      await c.connect();
      clients.push(c);
    }
    await Promise.all(clients.map((c, i) => c.get(`cold:${i}`)));
  });
  assert.equal(warnings, []);
  // the ioredis test above subscribed hk already: node-redis wraps share those listeners
  assert.equal(listeners(hk), before);
  assert.is(registry.size, baseline + 20);
  await Promise.all(clients.map((c) => c.quit()));
  await waitFor('every wrap left', () => registry.size === baseline);
  assert.equal(listeners(hk), before);
});

test("a wrap hears hk's events while its client is open: not after its end, again after its next ready", async () => {
  const registry = WrapEvents.of(hk);
  const baseline = registry.size;
  const c = withHotKeys(new Redis(fx.server.url, { maxRetriesPerRequest: 1 }), hk);
  const part = recorder();
  registry.follow(c, [part]);
  await fx.promote('w:a');
  await fx.demote('w:a');
  assert.equal(part.heard, ['promote w:a', 'demote w:a']);
  await c.quit();
  await waitFor('the wrap left', () => registry.size === baseline);
  await fx.promote('w:b');
  assert.equal(part.heard, ['promote w:a', 'demote w:a'], 'an ended client hears nothing');
  await c.connect();
  await waitFor('the wrap joined again', () => registry.size === baseline + 2);
  await fx.demote('w:b');
  await fx.promote('w:c');
  assert.equal(part.heard, ['promote w:a', 'demote w:a', 'demote w:b', 'promote w:c']);
  await c.quit();
  await waitFor('the wrap left', () => registry.size === baseline);
  // a client wrapped after its end joins at its next ready
  const ended = new Redis(fx.server.url, { maxRetriesPerRequest: 1 });
  await ended.quit();
  await waitFor('the client ended', () => ended.status === 'end');
  withHotKeys(ended, hk);
  assert.is(registry.size, baseline);
  await ended.connect();
  await waitFor('the late wrap joined', () => registry.size === baseline + 1);
  await ended.quit();
  await waitFor('the late wrap left', () => registry.size === baseline);
});

test("hk's close reaches every open wrap (their tracking connections close), and a wrap made after it at once", async () => {
  const sockP = fx.peer.nextSocket();
  const hk2 = new HotKeyClient({ app: 'shop', hubs: fx.peer.url, flushIntervalMs: 10 });
  await sockP;
  await hk2.ready({ signal: AbortSignal.timeout(3000) });
  const clients = [0, 1, 2].map(() => withHotKeys(new Redis(fx.server.url, { maxRetriesPerRequest: 1 }), hk2));
  try {
    await Promise.all(clients.map((c, i) => c.get(`cold:${i}`)));
    await waitFor('their tracking connections up', async () => (await ownConnections()) === 6);
    const part = recorder();
    WrapEvents.of(hk2).follow(clients[0]!, [part]);
    await hk2.close();
    assert.equal(part.heard, ['close']);
    await waitFor('their tracking connections closed', async () => (await ownConnections()) === 0);
    const late = recorder();
    WrapEvents.of(hk2).follow(clients[1]!, [late]);
    assert.equal(late.heard, ['close'], 'heard at once');
    assert.is(WrapEvents.of(hk2).size, 0, 'nothing joins a closed hk');
  } finally {
    await Promise.all(clients.map((c) => c.quit()));
  }
});

test('1,000 wrap + quit cycles: hk listeners and the registry back to baseline, and the quit clients collected', async () => {
  const registry = WrapEvents.of(hk);
  const baseline = registry.size;
  const before = listeners(hk);
  const refs: WeakRef<object>[] = [];
  for (let i = 0; i < 1000; i++) {
    const c = withHotKeys(new Redis(fx.server.url, { maxRetriesPerRequest: 1 }), hk);
    // every tenth one reads, which opens its tracking connections
    await (i % 10 === 0 ? c.get(`cycle:${i}`) : c.ping());
    await c.quit();
    if (i % 50 < 2) refs.push(new WeakRef(c)); // readers and pingers
  }
  for (let i = 0; i < 100; i++) {
    const c = withNodeRedis(createClient({ url: fx.server.url }), hk);
    await c.connect();
    await c.get(`cycle:${i}`);
    await c.quit();
    if (i % 10 === 0) refs.push(new WeakRef(c));
  }
  await waitFor('every wrap left', () => registry.size === baseline);
  assert.equal(listeners(hk), before);
  await waitFor('their tracking connections closed', async () => (await ownConnections()) === 0);
  await waitFor(
    'every quit client collected',
    () => {
      gc();
      return refs.every((r) => r.deref() === undefined);
    },
    10_000,
    50,
  );
});

test.run();
