/**
 * The packages as a user gets them: `pnpm pack` the three packages, serve the tarballs from a
 * throwaway npm registry on 127.0.0.1 (for the @hotkey scope only; ioredis, ws, typescript … come
 * from the public registry through the npm cache), and run the README's Install commands
 * verbatim in a fresh folder under os.tmpdir(), outside the workspace. Then, against one hub
 * started with the README's `npx @hotkey/hub`, each consumer must see a key promoted:
 *
 *   esm  a plain JavaScript ES module service
 *   cjs  a CommonJS service: require('@hotkey/sdk') through Node's require(esm)
 *   ts   the README's "Use it from a service" snippet, verbatim, in a strict NodeNext project:
 *        `tsc --noEmit`, then compiled with tsc and run (plus withHotKeys on a Redis.Cluster)
 *   nr   a node-redis service in a folder of its own (the README's `npm install @hotkey/sdk redis`, no
 *        ioredis): wraps its client as the README shows (`withHotKeys(await createClient({ url })
 *        .connect(), hk)` from `@hotkey/sdk/node-redis`), reads a flash key until the hub promotes it,
 *        then shows it served locally (Redis's GET count stops growing); then a client wrapped with
 *        `tracking: { prefixes }` surges a key under them on its first read's GET alone
 *   hub  `npx @hotkey/hub` serves the prebuilt dashboard; `npx hotkey-hub --help` works, and so
 *        does `hotkey-hub` after `npm install -g @hotkey/hub` (into a prefix of the test's own);
 *        `npx hotkey-hub conformance --help` loads the kit with the installed sdk's test vectors
 *
 * Every child runs without the workspace's NODE_OPTIONS / npm_config_* and every wait has a deadline.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HubProcess } from '../support/hub-process.ts';
import { RedisServer } from '../support/redis-server.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PACKAGES = ['sdk', 'dashboard', 'hub'] as const; // dependency order
const TOKEN = 's3cret';

/** What a process outside the workspace lacks: tsx, the source condition, pnpm's and npm's config (and HOTKEY_*). */
const WORKSPACE_ENV = /^(NODE_OPTIONS$|npm_|PNPM_|HOTKEY_)/;

/** The environment of a process outside the workspace. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!WORKSPACE_ENV.test(k)) env[k] = v;
  return { ...env, NO_COLOR: '1', FORCE_COLOR: '0', ...extra };
}

function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; timeoutMs: number; env?: Record<string, string> },
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { cwd: opts.cwd, env: cleanEnv(opts.env), timeout: opts.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        if (err)
          reject(
            new Error(
              `${cmd} ${args.join(' ')} failed (${err.code ?? err.signal ?? err.message}) in ${opts.cwd}\n${stdout}\n${stderr}`,
            ),
          );
        else resolve({ stdout, stderr });
      },
    );
  });
}

/** A registry for the @hotkey scope: packuments and tarballs of the packed packages. */
async function startScopeRegistry(tarballs: Map<string, string>): Promise<{ server: Server; url: string }> {
  const packuments = new Map<string, object>();
  const prefix = randomUUID();
  const server = createServer((req, res) => {
    // a path prefix of its own, so that npm never mixes this run's packuments with a cached one
    const url = decodeURIComponent(req.url ?? '/');
    if (!url.startsWith(`/${prefix}/`)) return void res.writeHead(404).end();
    const path = url.slice(prefix.length + 2);
    const doc = packuments.get(path);
    if (doc) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
      return;
    }
    const file = [...tarballs.values()].find((f) => path === `-/${f.slice(f.lastIndexOf('/') + 1)}`);
    if (file) res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(readFileSync(file));
    else res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/${prefix}/`;
  for (const [name, file] of tarballs) {
    const manifest = JSON.parse(
      (await run('tar', ['-xzOf', file, 'package/package.json'], { cwd: ROOT, timeoutMs: 10_000 })).stdout,
    ) as { version: string };
    const bytes = readFileSync(file);
    const dist = {
      tarball: `${url}-/${file.slice(file.lastIndexOf('/') + 1)}`,
      shasum: createHash('sha1').update(bytes).digest('hex'),
      integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
    };
    packuments.set(name, {
      name,
      'dist-tags': { latest: manifest.version },
      versions: { [manifest.version]: { ...manifest, dist } },
    });
  }
  return { server, url };
}

/** A JS consumer body: hammers `key` through hk.get until the hub promotes it (deadline 20 s). */
const HAMMER = `
const deadline = Date.now() + 20_000;
const promoted = new Promise((resolve) => hk.on('promote', (k) => { if (k === KEY) resolve(); }));
let done = false;
promoted.then(() => (done = true));
while (!done) {
  if (Date.now() > deadline) throw new Error(KEY + ' was not promoted within 20 s');
  await hk.get(KEY, async () => 'v');
  await new Promise((r) => setTimeout(r, 2));
}
console.log('PROMOTED ' + KEY);
await hk.close();
`;

const ESM_SERVICE = `import { HotKeyClient, PROTOCOL_VERSION } from '@hotkey/sdk';
import { parseRules } from '@hotkey/sdk/rules';
import { Ownership } from '@hotkey/sdk/ownership';
import { decodeFrame } from '@hotkey/sdk/protocol';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { metricsText } from '@hotkey/sdk/metrics';
if (typeof parseRules !== 'function' || typeof Ownership !== 'function' || typeof decodeFrame !== 'function' || typeof withHotKeys !== 'function' || PROTOCOL_VERSION < 1) throw new Error('missing exports');
const KEY = 'item:esm';
const hk = new HotKeyClient({ app: 'shop', hubs: [process.env.HOTKEY_HUB], token: process.env.HOTKEY_TOKEN });
await hk.ready({ signal: AbortSignal.timeout(10_000) });
${HAMMER}
if (!/^hotkey_sdk_misses_total\\{app="shop"\\} [1-9]/m.test(metricsText(hk))) throw new Error("metricsText: no misses");`;

const CJS_SERVICE = `'use strict';
const { HotKeyClient } = require('@hotkey/sdk');
const { withHotKeys } = require('@hotkey/sdk/ioredis');
if (typeof withHotKeys !== 'function') throw new Error('missing withHotKeys');
const KEY = 'item:cjs';
(async () => {
  const hk = new HotKeyClient({ app: 'shop', hubs: [process.env.HOTKEY_HUB], token: process.env.HOTKEY_TOKEN });
  await hk.ready({ signal: AbortSignal.timeout(10_000) });
  ${HAMMER}
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
`;

/**
 * A node-redis service, everything imported from `@hotkey/sdk/node-redis` (as sdk/README shows): the
 * flash key is read through the wrapped client until the hub promotes it,
 * then 200 more reads must leave Redis's GET count (INFO commandstats, read on a plain client)
 * where it was — retried until the first load after the promotion landed (deadline 20 s).
 */
const NODE_REDIS_SERVICE = `import { HotKeyClient, withHotKeys } from '@hotkey/sdk/node-redis';
import { createClient } from 'redis';
const KEY = 'item:nr';
const hk = new HotKeyClient({ app: 'shop', hubs: [process.env.HOTKEY_HUB], token: process.env.HOTKEY_TOKEN });
await hk.ready({ signal: AbortSignal.timeout(10_000) });
const redis = withHotKeys(await createClient({ url: process.env.REDIS_URL }).connect(), hk);
redis.on('error', console.error);
const admin = await createClient({ url: process.env.REDIS_URL }).on('error', console.error).connect();
await admin.set(KEY, 'stock:42');
const getsAtRedis = async () => Number(/^cmdstat_get:calls=(\\d+)/m.exec(await admin.info('commandstats'))?.[1] ?? 0);
const deadline = Date.now() + 20_000;
while (!hk.isHot(KEY)) {
  if (Date.now() > deadline) throw new Error(KEY + ' was not promoted within 20 s');
  await redis.get(KEY);
  await new Promise((r) => setTimeout(r, 2));
}
for (;;) {
  const before = await getsAtRedis();
  for (let i = 0; i < 200; i++) if ((await redis.get(KEY)) !== 'stock:42') throw new Error('wrong value');
  const grew = (await getsAtRedis()) - before;
  if (grew === 0) break;
  if (Date.now() > deadline) throw new Error(KEY + ' still read from Redis: ' + grew + ' GETs for 200 reads');
}
console.log('SERVED LOCALLY ' + KEY + ': 200 reads, 0 GETs at Redis');
// tracked prefixes (sdk/README): a surge under them costs its first read's GET alone
await admin.set('item:flash:nr', 'sale');
const watched = withHotKeys(await createClient({ url: process.env.REDIS_URL }).connect(), hk, {
  tracking: { prefixes: ['item:flash:'] },
});
watched.on('error', console.error);
for (;;) {
  const kept = hk.stats().recentReads;
  await watched.get('item:flash:probe');
  if (hk.stats().recentReads > kept) break; // the broadcast session is live: a read under it is kept
  if (Date.now() > deadline) throw new Error('no read kept under the tracked prefix within 20 s');
  await new Promise((r) => setTimeout(r, 20));
}
const gets0 = await getsAtRedis();
if ((await watched.get('item:flash:nr')) !== 'sale') throw new Error('wrong value');
const burst = await Promise.all(Array.from({ length: 50 }, () => watched.get('item:flash:nr')));
if (burst.some((v) => v !== 'sale')) throw new Error('wrong value in the burst');
const surgeGets = (await getsAtRedis()) - gets0;
if (!hk.isHot('item:flash:nr') || surgeGets !== 1) throw new Error('item:flash:nr: hot ' + hk.isHot('item:flash:nr') + ', ' + surgeGets + ' GETs');
console.log('SURGE UNDER A TRACKED PREFIX item:flash:nr: 51 reads, 1 GET at Redis');
await watched.close();
await redis.close();
await admin.close();
await hk.close();
`;

/** What the README snippet leaves to the service: its logger, database and id. */
const TS_PRELUDE = `// --- the service's own (not part of the README snippet)
const log = {
  info: (fields: object, msg: string): void => console.log(msg, JSON.stringify(fields)),
  warn: (fields: unknown): void => console.warn(fields),
};
const id = 42;
const db = { items: { find: async (key: string) => ({ key, name: 'a thing' }) } };
// --- the README snippet, verbatim
`;

/** After the snippet: a Redis.Cluster type-checks with withHotKeys; item:42 reaches the hub and is promoted. */
const TS_EPILOGUE = `
// --- the test's own
const cluster = withHotKeys(new Redis.Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true }), hk);
const clusterGet: (key: string) => Promise<string | null> = cluster.get.bind(cluster);
void clusterGet;
const deadline = Date.now() + 20_000;
// the hub's decision, not isHot(): a local surge makes the key hot here before the hub promotes it
let promoted = false;
hk.on('promote', (key) => {
  if (key === 'item:42') promoted = true;
});
while (!promoted) {
  if (Date.now() > deadline) throw new Error('item:42 was not promoted within 20 s');
  await redis.get('item:42');
  await new Promise((r) => setTimeout(r, 2));
}
console.log('PROMOTED item:42', await redis.get('item:42'));
cluster.disconnect();
redis.disconnect();
await hk.close();
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noUncheckedIndexedAccess: true,
    verbatimModuleSyntax: true,
    skipLibCheck: false,
    types: ['node'],
    outDir: 'out',
  },
  include: ['service.ts'],
};

/** The first ```ts block of the README's "Use it from a service" section. */
function readmeSnippet(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Use it from a service'));
  const m = /```ts\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error('README has no ```ts block under "Use it from a service"');
  return m[1]!;
}

/** The README's Install commands, verbatim. */
function readmeInstallCommands(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Install'), readme.indexOf('## Use it from a service'));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)]
    .flatMap((m) => m[1]!.split('\n'))
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
}

let work: string;
let registry: Server | undefined;
let hub: HubProcess | undefined;
let redis: RedisServer | undefined;

test.after(async () => {
  await hub?.stop();
  await redis?.stop();
  registry?.close();
  registry?.closeAllConnections();
  if (work) rmSync(work, { recursive: true, force: true });
});

test('packed tarballs installed outside the workspace: ESM, CommonJS, NodeNext TypeScript and npx hub consumers', async () => {
  const started = Date.now();
  work = mkdtempSync(join(tmpdir(), 'hotkey-consumers-'));
  const packDir = join(work, 'tarballs');
  mkdirSync(packDir);

  // one recursive pack, in dependency order: each package's prepack builds it
  await run('pnpm', ['-r', ...PACKAGES.flatMap((p) => ['--filter', `./${p}`]), 'pack', '--pack-destination', packDir], {
    cwd: ROOT,
    timeoutMs: 120_000,
  });
  const tarballs = new Map<string, string>();
  for (const pkg of PACKAGES) {
    const file = readdirSync(packDir).find((f) => f.startsWith(`hotkey-${pkg}-`) && f.endsWith('.tgz'));
    assert.ok(file, `pnpm pack wrote no tarball for ${pkg}: ${readdirSync(packDir).join(', ')}`);
    tarballs.set(`@hotkey/${pkg}`, join(packDir, file));
  }
  const listing = (await run('tar', ['-tzf', tarballs.get('@hotkey/hub')!], { cwd: work, timeoutMs: 10_000 })).stdout;
  assert.ok(listing.includes('package/dist/cli.js') && listing.includes('package/bin/hotkey-hub.js'), listing);
  assert.not.ok(/package\/src\//.test(listing), 'the hub tarball ships no TypeScript sources');
  assert.ok(listing.includes('package/dist/conformance-cli.js'), listing);
  const sdkListing = (await run('tar', ['-tzf', tarballs.get('@hotkey/sdk')!], { cwd: work, timeoutMs: 10_000 }))
    .stdout;
  for (const file of ['src/wire/PROTOCOL.md', 'src/wire/test-vectors.json', 'dist/wire/test-vectors.json'])
    assert.ok(sdkListing.includes(`package/${file}`), `the sdk tarball lacks ${file}`);
  const dashListing = (await run('tar', ['-tzf', tarballs.get('@hotkey/dashboard')!], { cwd: work, timeoutMs: 10_000 }))
    .stdout;
  assert.ok(dashListing.includes('package/dist/assets/app.js'), dashListing);

  const packedAt = Date.now();
  const reg = await startScopeRegistry(tarballs);
  registry = reg.server;

  // one project for every consumer, outside the workspace; only the @hotkey scope is local
  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
  writeFileSync(
    join(app, '.npmrc'),
    `@hotkey:registry=${reg.url}\naudit=false\nfund=false\nprefer-offline=true\nupdate-notifier=false\n`,
  );
  const install = readmeInstallCommands();
  assert.equal(install[0], 'npm install @hotkey/sdk ioredis');
  assert.equal(install[1], 'npm install @hotkey/sdk redis');
  assert.equal(install[2], 'npx @hotkey/hub');
  assert.ok(install[3]?.startsWith('npm install -g @hotkey/hub && hotkey-hub '), install[3]);
  // the README's command, plus the hub (so npx runs the installed one) and the TypeScript tools;
  // beside it a node-redis service in a project of its own, without ioredis
  const nodeRedisApp = join(work, 'node-redis-service');
  const nodeRedis = sdkListing.includes('package/dist/node-redis.js');
  if (!nodeRedis) console.log('# node-redis service SKIPPED: the sdk tarball has no dist/node-redis.js');
  else {
    mkdirSync(nodeRedisApp);
    writeFileSync(
      join(nodeRedisApp, 'package.json'),
      JSON.stringify({ name: 'nr-service', version: '1.0.0', private: true, type: 'module' }),
    );
    writeFileSync(join(nodeRedisApp, '.npmrc'), readFileSync(join(app, '.npmrc')));
    writeFileSync(join(nodeRedisApp, 'service.js'), NODE_REDIS_SERVICE);
  }
  await Promise.all([
    run('npm', ['install', '@hotkey/sdk', 'ioredis', '@hotkey/hub', 'typescript@~5.9.3', '@types/node@^20'], {
      cwd: app,
      timeoutMs: 120_000,
    }),
    // the README's node-redis install line, verbatim
    nodeRedis && run('npm', install[1]!.split(' ').slice(1), { cwd: nodeRedisApp, timeoutMs: 120_000 }),
  ]);
  if (nodeRedis)
    assert.not.ok(
      readdirSync(join(nodeRedisApp, 'node_modules')).includes('ioredis'),
      'the node-redis service installs no ioredis',
    );
  const installedAt = Date.now();
  console.log(
    `# packed in ${((packedAt - started) / 1000).toFixed(1)} s, installed in ${((installedAt - packedAt) / 1000).toFixed(1)} s`,
  );

  const config = join(work, 'hub.json');
  writeFileSync(
    config,
    JSON.stringify({ apps: { shop: { token: TOKEN, rules: [{ match: 'item:*', threshold: 20, hotMs: 30_000 }] } } }),
  );
  // `npx` in its own process group: stopping the group stops the hub under it
  hub = await HubProcess.start({
    command: ['npx', '@hotkey/hub'],
    args: ['--port', '0', '--config', config],
    cwd: app,
    group: true,
    dropEnv: WORKSPACE_ENV,
  });
  assert.not.ok(
    /^import .*tsx/m.test(readFileSync(join(app, 'node_modules/@hotkey/hub/bin/hotkey-hub.js'), 'utf8')),
    'the bin needs no TypeScript loader',
  );
  assert.not.ok(readdirSync(join(app, 'node_modules')).includes('tsx'), 'tsx is not installed with the packages');
  const page = await fetch(`${hub.httpUrl}/`, { signal: AbortSignal.timeout(5000) });
  assert.equal(page.status, 200);
  assert.match(await page.text(), /\/assets\/app\.js/);
  const script = await fetch(`${hub.httpUrl}/assets/app.js`, { signal: AbortSignal.timeout(5000) });
  assert.equal(script.status, 200);
  assert.ok((await script.arrayBuffer()).byteLength > 10_000, 'the prebuilt page script is served');

  // the consumers
  mkdirSync(join(app, 'esm'));
  writeFileSync(join(app, 'esm', 'service.mjs'), ESM_SERVICE);
  mkdirSync(join(app, 'cjs'));
  writeFileSync(join(app, 'cjs', 'service.cjs'), CJS_SERVICE);
  const ts = join(app, 'ts');
  mkdirSync(ts);
  writeFileSync(join(ts, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(join(ts, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  const snippet = readmeSnippet();
  assert.match(snippet, /import \{ Redis \} from 'ioredis';/);
  writeFileSync(join(ts, 'service.ts'), TS_PRELUDE + snippet + TS_EPILOGUE);
  const tsc = join(app, 'node_modules', 'typescript', 'bin', 'tsc');
  // the README's global install, into a prefix of our own
  const globalPrefix = join(work, 'global');
  const globalHelp = async () => {
    await run(
      'npm',
      [
        'install',
        '-g',
        '@hotkey/hub',
        '--prefix',
        globalPrefix,
        `--@hotkey:registry=${reg.url}`,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
      ],
      { cwd: work, timeoutMs: 120_000 },
    );
    return run(join(globalPrefix, 'bin', 'hotkey-hub'), ['--help'], { cwd: work, timeoutMs: 30_000 });
  };
  const [help, , , global, kit] = await Promise.all([
    run('npx', ['hotkey-hub', '--help'], { cwd: app, timeoutMs: 30_000 }),
    run(process.execPath, [tsc, '--noEmit', '-p', '.'], { cwd: ts, timeoutMs: 120_000 }),
    RedisServer.start().then((server) => (redis = server)),
    globalHelp(),
    // the conformance kit loads the protocol's test vectors from the installed sdk
    run('npx', ['hotkey-hub', 'conformance', '--help'], { cwd: app, timeoutMs: 30_000 }),
  ]);
  assert.match(help.stdout, /usage: hotkey-hub/);
  assert.match(kit.stdout, /usage: hotkey-hub conformance/);
  assert.match(global.stdout, /usage: hotkey-hub/);
  // type-checked above; emit only (Node 20 cannot strip types)
  await run(process.execPath, [tsc, '-p', '.', '--noCheck'], { cwd: ts, timeoutMs: 120_000 });

  const env = { HOTKEY_HUB: hub.url, HOTKEY_TOKEN: TOKEN, REDIS_URL: redis!.url };
  const [esm, cjs, tsOut, nr] = await Promise.all([
    run(process.execPath, ['service.mjs'], { cwd: join(app, 'esm'), timeoutMs: 30_000, env }),
    run(process.execPath, ['service.cjs'], { cwd: join(app, 'cjs'), timeoutMs: 30_000, env }),
    run(process.execPath, [join('out', 'service.js')], { cwd: ts, timeoutMs: 30_000, env }),
    nodeRedis ? run(process.execPath, ['service.js'], { cwd: nodeRedisApp, timeoutMs: 30_000, env }) : undefined,
  ]);
  if (nr) {
    assert.match(nr.stdout, /SERVED LOCALLY item:nr: 200 reads, 0 GETs at Redis/);
    assert.match(nr.stdout, /SURGE UNDER A TRACKED PREFIX item:flash:nr: 51 reads, 1 GET at Redis/);
  }
  assert.match(esm.stdout, /PROMOTED item:esm/);
  assert.match(cjs.stdout, /PROMOTED item:cjs/);
  assert.match(tsOut.stdout, /PROMOTED item:42 \{"key":"item:42","name":"a thing"\}/);
  assert.match(tsOut.stdout, /hot key \{"key":"item:42"/);
  console.log(`# hub, type-check and consumers done in ${((Date.now() - installedAt) / 1000).toFixed(1)} s`);
});

test.run();
