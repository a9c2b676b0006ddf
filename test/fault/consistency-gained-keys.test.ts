/**
 * Stale reads in the window of an owner change, counted: a hub that gains a key while the hub
 * that owned it has not heard of the change yet. Hub A reaches Redis through a proxy the test
 * freezes, so A keeps its member list of one; hub B joins meanwhile and owns key K in the list
 * every SDK computes (A and B). A reader instance connected to both reads K hot; a writer
 * connected to A alone then writes K: A believes it owns K, finds no holder of it in its own
 * directory and acks at once. Every read the reader makes after that ack must see the write.
 * Two ways the reader could serve K from memory, one case each:
 *
 * - a local surge (registered at B): B records no Hold of K within its ownership fence (its start
 *   here), so the reader reads through;
 * - B's promotion (no local surges, a threshold the reader's reads cross): B holds the Promote
 *   back until A shows it knows of B (a handoff marker A, cut off, never sends) or the fence
 *   passed, so the reader reads through although B decided K hot.
 *
 * Slow to start on a loaded machine, B often comes up once A's entry expired in Redis (A's
 * heartbeats are cut off too): B is then listed alone, and A is a previous owner it cannot name.
 *
 * The window exercised is a previous owner lagging behind the change, well inside B's fence
 * (B runs with a 20 s lease: a 23 s fence, room for a loaded machine). A previous owner cut off
 * from Redis for longer than the fence is outside the guarantee (ownership-fence.ts).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HotKeyClient } from '@hotkey/sdk';
import { MsgType } from '@hotkey/sdk/protocol';
import { fenceMsOf } from '../../hub/src/core/invalidate/ownership-fence.ts';
import { Cluster } from '../cluster/cluster-harness.ts';
import { HubProcess } from '../support/hub-process.ts';
import { RawClient } from '../support/raw-client.ts';
import { RedisServer } from '../support/redis-server.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';
import { tempDir } from '../support/temp-dir.ts';
import { waitFor } from '../support/wait.ts';

const APP = 'shop';
const B_LEASE_MS = 20_000;
const B_FENCE_MS = fenceMsOf(B_LEASE_MS);
/** reads of K the reader makes after the ack */
const READS_AFTER = 50;

interface Case {
  /** the rule's threshold per 1 s window */
  threshold: number;
  /** the reader's local surges on (true) or off */
  surgeLocal: boolean;
}

/**
 * local surge: the reader's ~400 reads/s surge it locally (a slice of 100 ms over
 * surgeLocal.fraction × threshold), far below a promotion
 */
const LOCAL_SURGE: Case = { threshold: 2000, surgeLocal: true };
/** promotion: the same reads cross the threshold at B within the surge; no local surge */
const PROMOTION: Case = { threshold: 200, surgeLocal: false };

/** Runs the window once; returns the stale reads after the ack (and asserts what makes the run count). */
async function run({ threshold, surgeLocal }: Case): Promise<number> {
  const redis = await RedisServer.start();
  const proxy = await TcpProxy.start(redis.port);
  const dir = tempDir('hotkey-gained-');
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ apps: { [APP]: { rules: [{ match: 'item:*', threshold }] } } }));
  const member = (id: string, redisUrl: string, extra: string[] = []) =>
    HubProcess.start({ args: ['--redis', redisUrl, '--node-id', id, '--config', config, ...extra] });
  const hubs: HubProcess[] = [];
  let reader: HotKeyClient | undefined;
  let writer: RawClient | undefined;
  try {
    const a = await member('hub-a', `redis://127.0.0.1:${proxy.port}`);
    hubs.push(a);
    writer = (await RawClient.join(a.url, APP)).client;
    let id = 0;
    const write = async (key: string) => {
      const mine = ++id;
      writer!.send({ t: MsgType.InvalidateRequest, id: mine, key });
      return writer!.next(MsgType.Ack, 10_000, (m) => m.id === mine);
    };
    await write('item:warm'); // A acks writes: past its own start fence
    proxy.freeze(); // A hears nothing of Redis from now on: B's arrival included
    const bStarted = Date.now();
    const b = await member('hub-b', redis.url, ['--lease-ms', String(B_LEASE_MS)]);
    hubs.push(b);
    const key = Cluster.keysOwnedBy(['hub-a', 'hub-b'], 'hub-b', 1, 'item:gained:')[0]!;

    let truth = 'v0';
    let loads = 0;
    const load = async () => {
      loads++;
      return truth;
    };
    reader = new HotKeyClient({ app: APP, hubs: [a.url, b.url], surgeLocal });
    reader.on('error', () => {});
    await reader.ready({ signal: AbortSignal.timeout(10_000) });
    await waitFor('the reader on both hubs', () => reader!.hubs().length === 2, 10_000);
    // the surge: reads every 2 ms for up to 1.5 s, until 50 in a row were served locally
    const surgeEnd = Date.now() + 1500;
    let local = 0;
    while (Date.now() < surgeEnd && local < 50) {
      const before = loads;
      assert.is(await reader.get(key, load), 'v0');
      local = loads === before ? local + 1 : 0;
      await new Promise((r) => setTimeout(r, 2));
    }
    const loadsBefore = loads;
    if (!surgeLocal) {
      // B decided K hot: the window is exercised, whether B announced it or held it back
      await waitFor('B counts K hot', async () => JSON.stringify(await hotAt(b)).includes(key), 5000);
    }
    truth = 'v1';
    const ack = await write(key);
    assert.ok(ack.fenced.length === 0, 'acked with no instance fenced');
    let stale = 0;
    for (let i = 0; i < READS_AFTER; i++) {
      if ((await reader.get(key, load)) !== 'v1') stale++;
      await new Promise((r) => setTimeout(r, 2));
    }
    const elapsed = Date.now() - bStarted;
    console.log(
      `# ${stale} stale of ${READS_AFTER} reads after the ack; the reader loaded K ${loadsBefore} times during its surge (${local} reads in a row served locally at its end); ${elapsed} ms after B's start (its fence: ${B_FENCE_MS} ms)`,
    );
    assert.ok(elapsed < B_FENCE_MS, `the window ran inside B's fence (${elapsed} ms)`);
    return stale;
  } finally {
    proxy.thaw();
    writer?.close();
    await reader?.close();
    for (const hub of hubs.reverse()) await hub.stop();
    await proxy.close();
    await redis.stop();
  }
}

/** B's hot keys, as its API shows them */
async function hotAt(hub: HubProcess): Promise<unknown> {
  const res = await fetch(`${hub.httpUrl}/api/hot?app=${APP}`, { signal: AbortSignal.timeout(2000) });
  return res.json();
}

test('a write acked by a previous owner that has not heard of the change: 0 stale reads of a local surge at the new owner', async () => {
  assert.is(await run(LOCAL_SURGE), 0, 'stale reads after the ack');
});

test('the same window with a promotion at the new owner instead of a local surge: 0 stale reads', async () => {
  assert.is(await run(PROMOTION), 0, 'stale reads after the ack');
});

test.run();
