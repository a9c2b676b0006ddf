/**
 * The peer ranges of sdk/package.json, tested at both ends: each supported client library at its
 * lowest supported release and at its pinned newest one (test/support/client-versions.ts; the
 * test package installs them as `<name>-lowest` / `<name>-newest`) goes through its adapter's
 * focused end-to-end cases on a real redis-server (test/support/adapter-contract.ts): hot reads
 * answered locally, a write through the wrapper reaching another instance at once, an outside
 * write dropped through tracking. iovalkey's clients go through the ioredis adapter.
 *
 * First, that the table, the installed aliases, the published peer ranges and the versions the
 * README's Install lines name say the same.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { Redis as IoredisLowest } from 'ioredis-lowest';
import { Redis as IoredisNewest } from 'ioredis-newest';
import { Redis as ValkeyLowest } from 'iovalkey-lowest';
import { Redis as ValkeyNewest } from 'iovalkey-newest';
import * as redisLowest from 'redis-lowest';
import * as redisNewest from 'redis-newest';
import { withHotKeys as withIoredis } from '@hotkey/sdk/ioredis';
import { withHotKeys as withNodeRedis } from '@hotkey/sdk/node-redis';
import { adapterContract, type ClientKit, type StringClient } from '../support/adapter-contract.ts';
import { PEER_ENDS, type PeerName } from '../support/client-versions.ts';

const readJson = (url: URL) => JSON.parse(readFileSync(url, 'utf8')) as Record<string, unknown>;
const installed = (alias: string) => readJson(new URL(`../node_modules/${alias}/package.json`, import.meta.url));
const peerRanges = readJson(new URL('../../sdk/package.json', import.meta.url)).peerDependencies as Record<
  string,
  string
>;
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const installSection = readme.slice(readme.indexOf('## Install'), readme.indexOf('## Use it from a service'));

/** `version` as [major, minor, patch] */
const parts = (version: string) => version.split('.').map(Number) as [number, number, number];

/** `version` as `major.minor`, as the README names it */
const majorMinor = (version: string) => version.split('.').slice(0, 2).join('.');

/** Whether `version` satisfies one of the caret alternatives (`^a.b.c || ^d.e.f`) of `range`. */
function satisfies(range: string, version: string): boolean {
  const [major, minor, patch] = parts(version);
  return range.split('||').some((alt) => {
    const m = /^\s*\^(\d+)\.(\d+)\.(\d+)\s*$/.exec(alt);
    if (!m) throw new Error(`peer range "${range}": only ^a.b.c alternatives are read here`);
    const [a, b, c] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const atLeast = minor > b || (minor === b && patch >= c);
    return major === a && (a > 0 ? atLeast : minor === b && patch >= c);
  });
}

test('the peer ranges, the pins, the installed aliases and the README agree', () => {
  for (const [name, ends] of Object.entries(PEER_ENDS) as [PeerName, (typeof PEER_ENDS)[PeerName]][]) {
    const range = peerRanges[name];
    assert.ok(range, `sdk/package.json has a peer range for ${name}`);
    for (const end of ['lowest', 'newest'] as const) {
      const pkg = installed(`${name}-${end}`);
      assert.is(pkg.name, name, `${name}-${end} is an alias of ${name}`);
      assert.is(pkg.version, ends[end], `${name}-${end} is ${ends[end]}`);
      assert.ok(satisfies(range, ends[end]), `${name} ${ends[end]} is in the peer range ${range}`);
    }
    const tested = `${name} ${majorMinor(ends.lowest)}–${majorMinor(ends.newest)}`;
    assert.ok(installSection.includes(tested), `README.md's Install names the versions tested: "${tested}"`);
    // the range's lowest release is the one tested: nothing below it is admitted
    const [major, minor, patch] = parts(ends.lowest);
    const below = patch > 0 ? `${major}.${minor}.${patch - 1}` : minor > 0 ? `${major}.${minor - 1}.99` : undefined;
    if (below) assert.not.ok(satisfies(range, below), `${name} ${below} is below the peer range ${range}`);
  }
});

interface IoredisFamily {
  new (url: string): StringClient & { disconnect(): void };
}

/** ioredis and iovalkey: one adapter, `new Redis(url)` connects by itself */
function ioredisKit(label: string, Redis: IoredisFamily): ClientKit {
  return {
    label,
    async connect(url) {
      const client = new Redis(url);
      await client.info('server');
      return { client, close: () => client.disconnect() };
    },
    wrap: (client, hk, { tracking }) => withIoredis(client as unknown as IoredisNewest, hk, { tracking }),
  };
}

interface NodeRedisLib {
  createClient(options: { url: string }): {
    on(event: 'error', listener: () => void): unknown;
    connect(): Promise<unknown>;
    destroy(): void;
  };
}

/** node-redis: `createClient({ url }).connect()` */
function nodeRedisKit(label: string, lib: NodeRedisLib): ClientKit {
  return {
    label,
    async connect(url) {
      const client = lib.createClient({ url });
      client.on('error', () => {});
      await client.connect();
      return { client: client as unknown as StringClient, close: () => client.destroy() };
    },
    wrap: (client, hk, { tracking }) => withNodeRedis(client, hk, { tracking }),
  };
}

const { ioredis, redis, iovalkey } = PEER_ENDS;
adapterContract(test, [
  ioredisKit(`ioredis ${ioredis.lowest}`, IoredisLowest as unknown as IoredisFamily),
  ioredisKit(`ioredis ${ioredis.newest}`, IoredisNewest as unknown as IoredisFamily),
  ioredisKit(`iovalkey ${iovalkey.lowest}`, ValkeyLowest as unknown as IoredisFamily),
  ioredisKit(`iovalkey ${iovalkey.newest}`, ValkeyNewest as unknown as IoredisFamily),
  nodeRedisKit(`redis ${redis.lowest}`, redisLowest as unknown as NodeRedisLib),
  nodeRedisKit(`redis ${redis.newest}`, redisNewest as unknown as NodeRedisLib),
]);

test.run();
