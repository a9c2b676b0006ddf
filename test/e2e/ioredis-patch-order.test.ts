/**
 * `withHotKeys` works whatever else patched the client's `sendCommand`, in whichever order: a
 * counter on the instance before or after wrapping (assigned, or defined the way shimmer does),
 * one on `Redis.prototype` before or after, the real @opentelemetry/instrumentation-ioredis, a
 * method spy. For each: hot reads are answered locally (Redis's own GET count, INFO commandstats,
 * rises by the one load) and the patch sees the commands that reached Redis — not the local hits —
 * except where the order puts it above the hook by construction (see sdk/src/ioredis/layers.ts).
 * A real hub process and a real redis-server; tracking off, so that every load goes over the
 * wrapped client itself and its patch can count it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import type { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { commandCalls } from '../support/commandstats.ts';
import { redisHub, type RedisHub } from '../support/redis-hub.ts';

let fixture: RedisHub;
let hk: HotKeyClient;
let plain: Redis;
const UNTRACKED = { tracking: false } as const;

test.before(async () => {
  fixture = await redisHub(undefined, 'hotkey-patch-order-');
  ({ hk, plain } = fixture);
});

test.after(async () => {
  await fixture?.close();
});

const client = (): Redis => fixture.client();
const promote = (key: string, on = hk): Promise<void> => fixture.promote(key, on);

/** GETs and HGETALLs Redis itself answered so far (every client of the server). */
async function served(): Promise<{ get: number; hgetall: number }> {
  return { get: await commandCalls(plain, 'get'), hgetall: await commandCalls(plain, 'hgetall') };
}

type Seen = string[];
/** A counting patch of `sendCommand` wrapping `original`, the way an APM agent or a test counter does it. */
function counter(seen: Seen, original: (this: unknown, ...a: any[]) => unknown) {
  return function (this: unknown, command: { name: string }, ...rest: unknown[]) {
    seen.push(command.name);
    return original.call(this, command, ...rest);
  };
}
/** Object.defineProperty, as shimmer's wrap does (no setter runs). */
function defineOwn(target: object, value: unknown): void {
  Object.defineProperty(target, 'sendCommand', { value, writable: true, configurable: true, enumerable: false });
}

/**
 * The same workload on every order: a hot string read 4 times and a hot hash read 3 times
 * (HGET/HGETALL take the command path, GET its fast path). Returns what Redis answered meanwhile.
 */
async function workload(c: Redis, tag: string): Promise<{ get: number; hgetall: number }> {
  const [s, h] = [`po:${tag}:s`, `po:${tag}:h`];
  await plain.set(s, 'v1');
  await plain.hset(h, { a: '1', b: '2' });
  await promote(s);
  await promote(h);
  const before = await served();
  for (let i = 0; i < 4; i++) assert.is(await c.get(s), 'v1');
  assert.is(await c.hget(h, 'a'), '1');
  assert.is(await c.hget(h, 'b'), '2');
  assert.equal(await c.hgetall(h), { a: '1', b: '2' });
  const after = await served();
  return { get: after.get - before.get, hgetall: after.hgetall - before.hgetall };
}

/** What a patch under the hook sees of `workload`: the two loads (each with its PTTL), nothing else. */
const LOADS_ONLY = ['get', 'pttl', 'hgetall', 'pttl'];

test('instance patched before wrapping (assigned): moved under the hook, sees only what reaches Redis', async () => {
  const c = client();
  const seen: Seen = [];
  (c as any).sendCommand = counter(seen, c.sendCommand);
  withHotKeys(c, hk, UNTRACKED);
  await c.ping();
  seen.length = 0;
  assert.equal(await workload(c, 'before'), { get: 1, hgetall: 1 }, 'served locally after one load each');
  assert.equal(seen, LOADS_ONLY);
});

test('instance patched before wrapping (defineProperty, as shimmer): the same', async () => {
  const c = client();
  const seen: Seen = [];
  defineOwn(c, counter(seen, c.sendCommand));
  withHotKeys(c, hk, UNTRACKED);
  await c.ping();
  seen.length = 0;
  assert.equal(await workload(c, 'before-define'), { get: 1, hgetall: 1 });
  assert.equal(seen, LOADS_ONLY);
});

test('instance patched after wrapping (assigned): stacked under the hook; undoing it removes it', async () => {
  const c = withHotKeys(client(), hk, UNTRACKED);
  const seen: Seen = [];
  const original = c.sendCommand;
  (c as any).sendCommand = counter(seen, original);
  assert.not.ok(Object.hasOwn(c, 'sendCommand'), 'no own property: the hook keeps the top');
  const outer: Seen = [];
  (c as any).sendCommand = counter(outer, c.sendCommand); // a second patch over the first
  await c.ping();
  seen.length = 0;
  outer.length = 0;
  assert.equal(await workload(c, 'after'), { get: 1, hgetall: 1 });
  assert.equal(seen, LOADS_ONLY, 'each command once, no loop through the hook');
  assert.equal(outer, LOADS_ONLY);
  (c as any).sendCommand = original; // undone: both patches stacked since `original` was read go
  assert.is(await c.get('po:after:s'), 'v1');
  await c.set('po:after:x', '1');
  assert.equal(seen, LOADS_ONLY);
  assert.equal(outer, LOADS_ONLY);
});

test('instance patched after wrapping by defineProperty: above the hook, which still serves locally', async () => {
  const c = withHotKeys(client(), hk, UNTRACKED);
  const seen: Seen = [];
  defineOwn(c, counter(seen, c.sendCommand));
  await c.ping();
  seen.length = 0;
  // Redis still answers one load per key; the patch sits on top and sees every command the
  // client is given (GET's fast path is a method, above sendCommand: its hits stay unseen)
  assert.equal(await workload(c, 'after-define'), { get: 1, hgetall: 1 });
  // GET: its load (sent through ioredis's get, so past this patch); HGET/HGETALL: every call,
  // while the hash's load (HGETALL + PTTL, sent by the hook) is under it
  assert.equal(seen, ['get', 'pttl', 'hget', 'hget', 'hgetall']);
});

test('Redis.prototype patched before and after wrapping: under the hook', async () => {
  const original = Redis.prototype.sendCommand;
  const seenBefore: Seen = [];
  const seenAfter: Seen = [];
  const c = client();
  try {
    Redis.prototype.sendCommand = function (this: Redis, command: any, ...rest: any[]) {
      if (this === c) seenBefore.push(command.name);
      return (original as any).call(this, command, ...rest);
    } as any;
    withHotKeys(c, hk, UNTRACKED);
    const patchedBefore = Redis.prototype.sendCommand;
    Redis.prototype.sendCommand = function (this: Redis, command: any, ...rest: any[]) {
      if (this === c) seenAfter.push(command.name);
      return (patchedBefore as any).call(this, command, ...rest);
    } as any;
    await c.ping();
    seenBefore.length = 0;
    seenAfter.length = 0;
    assert.equal(await workload(c, 'proto'), { get: 1, hgetall: 1 });
    assert.equal(seenBefore, LOADS_ONLY);
    assert.equal(seenAfter, LOADS_ONLY);
  } finally {
    Redis.prototype.sendCommand = original;
  }
});

test('@opentelemetry/instrumentation-ioredis (patches Redis.prototype): one span per command sent, none for local hits', async () => {
  const names: string[] = [];
  const c = client();
  const otel = new IORedisInstrumentation({
    enabled: false,
    requireParentSpan: false,
    requestHook: (_span, info) => void names.push(info.cmdName),
  });
  // the patch its require/import hook would apply on loading ioredis, applied to the loaded class
  const [definition] = otel.getModuleDefinitions();
  definition!.patch!(Redis as never, '6.0.0');
  otel.enable();
  try {
    assert.ok((Redis.prototype.sendCommand as { __wrapped?: boolean }).__wrapped, 'the instrumentation wrapped it');
    withHotKeys(c, hk, UNTRACKED);
    await c.ping();
    names.length = 0;
    assert.equal(await workload(c, 'otel'), { get: 1, hgetall: 1 });
    // `plain` counts INFO in workload(): keep this client's commands only
    assert.equal(
      names.filter((n) => n !== 'info' && n !== 'set' && n !== 'hset'),
      LOADS_ONLY,
    );
  } finally {
    otel.disable();
    definition!.unpatch!(Redis as never, '6.0.0');
  }
});

test('a command method spied on the instance, before or after wrapping: sees every call, reads stay local', async () => {
  const calls: unknown[][] = [];
  const c = client();
  const get = c.get;
  (c as any).get = function (this: Redis, ...args: unknown[]) {
    calls.push(args);
    return (get as any).apply(this, args);
  };
  withHotKeys(c, hk, UNTRACKED);
  const seen: Seen = [];
  (c as any).sendCommand = counter(seen, c.sendCommand);
  await c.ping();
  seen.length = 0;
  assert.equal(await workload(c, 'method'), { get: 1, hgetall: 1 });
  assert.is(calls.length, 4, 'the spy is above: every call');
  assert.equal(seen, LOADS_ONLY);
});

test('a hot key promoted by hand on an instance-patched client: its own write is read back at once', async () => {
  const c = client();
  const seen: Seen = [];
  (c as any).sendCommand = counter(seen, c.sendCommand);
  withHotKeys(c, hk, UNTRACKED);
  await c.set('po:own', 'old');
  await promote('po:own');
  assert.is(await c.get('po:own'), 'old');
  assert.is(await c.get('po:own'), 'old');
  assert.ok(hk.stats().hits >= 1);
  await c.set('po:own', 'new');
  assert.is(await c.get('po:own'), 'new', 'the awaited set() invalidated the cached value');
  assert.ok(seen.includes('set'));
});

test('clients that cannot be hooked: a TypeError naming why, and nothing half-installed', () => {
  const frozen = client();
  Object.preventExtensions(frozen);
  assert.throws(
    () => withHotKeys(frozen, hk),
    (e: Error) => e instanceof TypeError && /not extensible/.test(e.message),
  );
  const accessor = client();
  Object.defineProperty(accessor, 'sendCommand', { get: () => Redis.prototype.sendCommand, configurable: true });
  assert.throws(
    () => withHotKeys(accessor, hk),
    (e: Error) => e instanceof TypeError && /own accessor/.test(e.message),
  );
  const fixed = client();
  Object.defineProperty(fixed, 'sendCommand', { value: Redis.prototype.sendCommand, configurable: false });
  assert.throws(
    () => withHotKeys(fixed, hk),
    (e: Error) => e instanceof TypeError && /non-configurable/.test(e.message),
  );
  assert.is(Object.getPrototypeOf(fixed), Redis.prototype, 'left as it was');
});

test.run();
