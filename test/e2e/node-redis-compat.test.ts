/**
 * Ordinary node-redis usage through the adapter answers as plain node-redis does: one script of
 * everyday calls (strings, hashes, lists, sets, sorted sets, TTLs, counters, SCAN, transactions,
 * WATCH, pipelines, Lua, pub/sub on a duplicate, error replies, type mappings, raw sendCommand)
 * run on a plain client and on a wrapped one, on two prefixes of one real redis-server, with
 * every key the script reads hot on the wrapped side; the results must be equal.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient, WatchError } from '../support/node-redis-lib.ts';
import { withHotKeys } from '@hotkey/sdk/node-redis';
import { hubInProcess } from '../support/e2e.ts';
import { destroyAll } from '../support/node-redis.ts';
import { promoteInProcess } from '../support/promote.ts';
import { RedisServer } from '../support/redis-server.ts';
import { delay, waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: { rules: [{ match: '*', threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs: 600_000 }] },
    },
  },
});

const newClient = () => createClient({ url: server.url });
type Client = ReturnType<typeof newClient>;
let server: RedisServer;
const opened: Array<{ destroy(): void }> = [];

async function connected(c: Client): Promise<Client> {
  c.on('error', () => {});
  opened.push(c);
  await c.connect();
  return c;
}

test.before(async () => {
  server = await RedisServer.start();
});

test.after(async () => {
  destroyAll(opened);
  await delay(20);
  await server?.stop();
});

/** The script: every step's outcome (a value, or the error's class and message). */
async function script(c: Client, p: string): Promise<unknown[]> {
  const out: unknown[] = [];
  const step = async (f: () => Promise<unknown>) => {
    try {
      out.push(await f());
    } catch (e) {
      out.push(`${(e as Error).constructor.name}: ${(e as Error).message}`);
    }
  };
  await step(() => c.set(`${p}s`, 'v1'));
  await step(() => c.get(`${p}s`));
  await step(() => c.get(`${p}s`));
  await step(() => c.set(`${p}s`, 'v2', { NX: true }));
  await step(() => c.set(`${p}s`, 'v3', { GET: true }));
  await step(() => c.get(`${p}s`));
  await step(() => c.append(`${p}s`, '+'));
  await step(() => c.get(`${p}s`));
  await step(() => c.mGet([`${p}s`, `${p}missing`, `${p}n`]));
  await step(() => c.incr(`${p}n`));
  await step(() => c.incrBy(`${p}n`, 41));
  await step(() => c.get(`${p}n`));
  await step(() => c.hSet(`${p}h`, { a: '1', b: '2' }));
  await step(() => c.hGetAll(`${p}h`));
  await step(() => c.hGet(`${p}h`, 'a'));
  await step(() => c.hIncrBy(`${p}h`, 'a', 5));
  await step(() => c.hGetAll(`${p}h`));
  await step(() => c.get(`${p}h`)); // WRONGTYPE, as an error reply
  await step(() => c.rPush(`${p}l`, ['x', 'y', 'z']));
  await step(() => c.lRange(`${p}l`, 0, -1));
  await step(() => c.sAdd(`${p}set`, ['a', 'b']));
  await step(async () => (await c.sMembers(`${p}set`)).sort());
  await step(() =>
    c.zAdd(`${p}z`, [
      { score: 2, value: 'two' },
      { score: 1, value: 'one' },
    ]),
  );
  await step(() => c.zRangeWithScores(`${p}z`, 0, -1));
  await step(() => c.set(`${p}ttl`, 'soon', { PX: 60_000 }));
  await step(async () => (await c.pTTL(`${p}ttl`)) > 0);
  await step(() => c.get(`${p}ttl`));
  await step(() => c.persist(`${p}ttl`));
  await step(() => c.ttl(`${p}ttl`));
  await step(() => c.multi().set(`${p}s`, 'm').get(`${p}s`).incr(`${p}n`).exec());
  await step(() => c.get(`${p}s`));
  await step(() => c.multi().get(`${p}s`).set(`${p}s`, 'pipe').execAsPipeline());
  await step(() => c.get(`${p}s`));
  await step(async () => {
    // WATCH then a write by someone else: EXEC fails with node-redis's WatchError
    const w = await connected(c.duplicate());
    await w.watch(`${p}s`);
    await c.set(`${p}s`, 'other');
    try {
      await w.multi().set(`${p}s`, 'mine').exec();
      return 'committed';
    } catch (e) {
      return e instanceof WatchError ? 'WatchError' : String(e);
    }
  });
  await step(() => c.get(`${p}s`));
  await step(() => c.eval("return redis.call('SET', KEYS[1], ARGV[1])", { keys: [`${p}s`], arguments: ['lua'] }));
  await step(() => c.get(`${p}s`));
  await step(() => c.sendCommand(['GET', `${p}s`]));
  await step(async () => String(await c.withTypeMapping({ 36: Buffer }).get(`${p}s`)));
  await step(async () => {
    const keys: string[] = [];
    for await (const page of c.scanIterator({ MATCH: `${p}*`, COUNT: 100 })) keys.push(...page);
    return keys.map((k) => k.slice(p.length)).sort();
  });
  await step(async () => {
    const sub = await connected(c.duplicate());
    const heard = new Promise<string>((resolve) => void sub.subscribe(`${p}chan`, (m) => resolve(m)));
    await waitFor('subscribed', async () => Number((await c.pubSubNumSub(`${p}chan`))[`${p}chan`]) === 1);
    await c.publish(`${p}chan`, 'hello');
    return heard;
  });
  await step(() => c.del([`${p}s`, `${p}h`]));
  await step(() => c.get(`${p}s`));
  await step(() => c.exists(`${p}h`));
  return out;
}

test('the everyday script answers the same, plain and wrapped (its read keys hot)', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const plain = await connected(newClient());
  const wrapped = withHotKeys(await connected(newClient()), hk!);
  for (const key of ['s', 'n', 'h', 'ttl', 'missing']) await promoteInProcess(e2e.hub, 'shop', `w:${key}`, [hk!]);
  const a = await script(plain, 'p:');
  const b = await script(wrapped, 'w:');
  assert.equal(b, a);
  assert.ok(hk!.stats().hits > 0, 'some reads were answered locally');
});

test.run();
