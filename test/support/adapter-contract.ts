/**
 * What every supported client, at every supported version, must do through its adapter, on a
 * real redis-server: the focused end-to-end cases test/e2e/peer-versions.test.ts runs once per
 * client release, each named after it, on one hub in this process and one redis-server for all
 * (a hub acks no write in its first lease, so one hub per release would wait that out each time).
 * Each release uses keys of its own and a plain client of its own library.
 *
 *   hot    a promoted key's GETs are answered locally: Redis counts no GET of them
 *   write  a write through one instance's wrapped client reaches another instance (which does not
 *          track) before the write settles: that instance's first read after it is the new value
 *   outside  a write by a client without the SDK drops the hot value through Redis tracking
 */
import type { Test } from 'uvu';
import * as assert from 'uvu/assert';
import type { HotKeyClient } from '@hotkey/sdk';
import { callsIn } from './commandstats.ts';
import { hubInProcess } from './e2e.ts';
import { servedLocally } from './node-redis.ts';
import { promoteInProcess } from './promote.ts';
import { RedisServer } from './redis-server.ts';
import { waitFor } from './wait.ts';

/** The string commands the cases use; both client families have them under these names. */
export interface StringClient {
  get(key: string): Promise<string | null>;
  set(key: string, value: string): Promise<unknown>;
  info(section: string): Promise<string>;
}

/** One client library at one version, as the cases drive it. */
export interface ClientKit {
  /** e.g. 'iovalkey 0.4.0' */
  readonly label: string;
  /** a client of `url`, connected; `close()` ends it whether or not it is wrapped */
  connect(url: string): Promise<{ client: StringClient; close(): void }>;
  /** the adapter's `withHotKeys` on `client` (tracking on unless `tracking: false`) */
  wrap(client: StringClient, hk: HotKeyClient, options: { tracking: boolean }): StringClient;
}

/** Nothing turns hot by itself; a promoted key stays hot and cached for the whole file. */
const CONFIG = {
  apps: {
    shop: { rules: [{ match: '*', threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs: 600_000 }] },
  },
};

/** Registers the three cases of each kit on `test`, with the hub and the redis-server they share. */
export function adapterContract(test: Test, kits: readonly ClientKit[]): void {
  const e2e = hubInProcess(test, { config: CONFIG });
  let server: RedisServer | undefined;
  const opened: Array<() => void> = [];
  const instances = (n: number) => e2e.sdks(n, () => ({ flushIntervalMs: 20 }));
  const promote = (key: string, on: readonly HotKeyClient[]) => promoteInProcess(e2e.hub, 'shop', key, on);

  test.before(async () => {
    server = await RedisServer.start();
  });
  test.after(async () => {
    for (const close of opened.splice(0)) close();
    await server?.stop();
  });

  for (const kit of kits) {
    const k = (name: string) => `${kit.label}:${name}`;
    async function connect(): Promise<StringClient> {
      const { client, close } = await kit.connect(server!.url);
      opened.push(close);
      return client;
    }
    let plainClient: StringClient | undefined;
    const plain = async () => (plainClient ??= await connect());
    const getsAtRedis = async () => callsIn(await (await plain()).info('commandstats'), 'get');

    test(`${kit.label}: a hot GET is answered locally, Redis sees no GET of it after the first load`, async () => {
      const [hk] = await instances(1);
      const c = kit.wrap(await connect(), hk!, { tracking: true });
      await (await plain()).set(k('hot'), 'v1');
      assert.is(await c.get(k('hot')), 'v1', 'cold: from Redis');
      await promote(k('hot'), [hk!]);
      await servedLocally(c, k('hot'), 'v1', getsAtRedis);
      const before = await getsAtRedis();
      for (let i = 0; i < 50; i++) assert.is(await c.get(k('hot')), 'v1');
      assert.is(await getsAtRedis(), before, '50 hot reads, no GET at Redis');
    });

    test(`${kit.label}: a write through the wrapper reaches another instance before it settles`, async () => {
      const [writerHk, readerHk] = await instances(2);
      const writer = kit.wrap(await connect(), writerHk!, { tracking: true });
      // the reader hears the write through the hub alone: no tracking of its own
      const reader = kit.wrap(await connect(), readerHk!, { tracking: false });
      await (await plain()).set(k('write'), 'v0');
      await promote(k('write'), [writerHk!, readerHk!]);
      await servedLocally(reader, k('write'), 'v0', getsAtRedis);
      await writer.set(k('write'), 'v1');
      assert.is(await reader.get(k('write')), 'v1', "the reader's first read after the write");
      await servedLocally(reader, k('write'), 'v1', getsAtRedis);
    });

    test(`${kit.label}: an outside write (a plain client) drops the hot value through tracking`, async () => {
      const [hk] = await instances(1);
      const c = kit.wrap(await connect(), hk!, { tracking: true });
      await (await plain()).set(k('outside'), 'a');
      await promote(k('outside'), [hk!]);
      await servedLocally(c, k('outside'), 'a', getsAtRedis);
      await (await plain()).set(k('outside'), 'b');
      await waitFor('the outside write is seen', async () => (await c.get(k('outside'))) === 'b', 2000);
      await servedLocally(c, k('outside'), 'b', getsAtRedis);
    });
  }
}
