/**
 * The packages as a user gets them: `pnpm pack` the three packages, serve the tarballs from a
 * throwaway npm registry on 127.0.0.1 (for the @hotkey scope only; ioredis, ws, typescript … come
 * from the public registry through the npm cache), and run the README's Install commands in a
 * fresh folder under os.tmpdir(), outside the workspace, with the versions of one set
 * (test/support/client-versions.ts): exact ones, and the registry as of a date for what they pull
 * in (`pnpm test`), or the newest releases (`pnpm test:latest`, HOTKEY_TEST_VERSIONS=latest).
 * Then, against one hub started with the README's `npx @hotkey/hub`, each consumer must see a key
 * promoted:
 *
 *   esm  a plain JavaScript ES module service
 *   cjs  a CommonJS service: require('@hotkey/sdk') through Node's require(esm)
 *   ts   the README's "Use it from a service" snippet, verbatim, in a strict NodeNext project
 *        with the `skipLibCheck` that `tsc --init` writes (ioredis 6.1.0's own declarations need
 *        it, sdk/README.md): `tsc --noEmit`, then compiled with tsc and run (plus withHotKeys on
 *        a Redis.Cluster)
 *   nr   a node-redis service in a folder of its own (the README's `npm install @hotkey/sdk redis`, no
 *        ioredis): wraps its client as the README shows (`withHotKeys(await createClient({ url })
 *        .connect(), hk)` from `@hotkey/sdk/node-redis`), reads a flash key until the hub promotes it,
 *        then shows it served locally (Redis's GET count stops growing); then a client wrapped with
 *        `tracking: { prefixes }` surges a key under them on its first read's GET alone
 *   vk   an iovalkey service in a folder of its own (iovalkey alone, no ioredis): its clients
 *        through `@hotkey/sdk/ioredis`, type-checked (`new Redis()` of iovalkey is taken and
 *        handed back as such)
 *   adapters  test/package/adapter-check.mjs in the ioredis, iovalkey and node-redis projects: hot
 *        reads answered locally, a write through one instance's wrapper seen by another at once,
 *        an outside write dropped through tracking
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
import { consumerVersions, type Reported } from '../support/client-versions.ts';
import { CJS_SERVICE, ESM_SERVICE, NODE_REDIS_SERVICE, TS_EPILOGUE, TS_PRELUDE } from './services.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PACKAGES = ['sdk', 'dashboard', 'hub'] as const; // dependency order
const TOKEN = 's3cret';
const VERSIONS = consumerVersions();

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

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noUncheckedIndexedAccess: true,
    verbatimModuleSyntax: true,
    // what `tsc --init` writes: declaration files under node_modules are not checked
    skipLibCheck: true,
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

/** The iovalkey service's types: its clients go through the ioredis adapter and come back as themselves. */
const VALKEY_TYPES = `import { Cluster, Redis } from 'iovalkey';
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
const hk = new HotKeyClient({ app: 'shop', hubs: ['ws://127.0.0.1:7070'] });
const valkey: Redis = withHotKeys(new Redis({ lazyConnect: true }), hk);
const cluster: Cluster = withHotKeys(new Cluster([{ host: '127.0.0.1', port: 6379 }], { lazyConnect: true }), hk);
const value: string | null = await valkey.get('item:42');
// @ts-expect-error a URL is no client
withHotKeys('redis://127.0.0.1:6379', hk);
export { cluster, value };
`;

/** `npm install` arguments with the version set applied to each package it installs by name. */
function versioned(args: readonly string[]): string[] {
  const install = VERSIONS.install as Record<string, string | undefined>;
  return args.map((name) => (install[name] === undefined ? name : `${name}@${install[name]}`));
}

/** The version of `name` installed in the project at `dir`. */
function versionIn(dir: string, name: string): string {
  const pkg = JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
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
  const npmrc = [
    `@hotkey:registry=${reg.url}`,
    'audit=false',
    'fund=false',
    'update-notifier=false',
    ...Object.entries(VERSIONS.npm).map(([k, v]) => `${k}=${v}`),
    '',
  ].join('\n');
  const project = (name: string, type?: 'module'): string => {
    const dir = join(work, name);
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, type }));
    writeFileSync(join(dir, '.npmrc'), npmrc);
    for (const file of ['adapter-check.mjs', 'key-gets.mjs'])
      writeFileSync(join(dir, file), readFileSync(new URL(`./${file}`, import.meta.url)));
    return dir;
  };
  const app = project('app');
  const install = readmeInstallCommands();
  assert.equal(install[0], 'npm install @hotkey/sdk ioredis');
  assert.equal(install[1], 'npm install @hotkey/sdk redis');
  assert.equal(install[2], 'npx @hotkey/hub');
  assert.ok(install[3]?.startsWith('npm install -g @hotkey/hub && hotkey-hub '), install[3]);
  // the README's command, plus the hub (so npx runs the installed one) and the TypeScript tools;
  // beside it a node-redis service and an iovalkey service, each in a project of its own without ioredis
  const nodeRedis = sdkListing.includes('package/dist/node-redis.js');
  if (!nodeRedis) console.log('# node-redis service SKIPPED: the sdk tarball has no dist/node-redis.js');
  const nodeRedisApp = nodeRedis ? project('node-redis-service', 'module') : '';
  if (nodeRedis) writeFileSync(join(nodeRedisApp, 'service.js'), NODE_REDIS_SERVICE);
  const valkeyApp = project('iovalkey-service', 'module');
  writeFileSync(join(valkeyApp, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, include: ['types.ts'] }, null, 2));
  writeFileSync(join(valkeyApp, 'types.ts'), VALKEY_TYPES);
  const npmInstall = (line: string, cwd: string) =>
    run('npm', ['install', ...versioned(line.split(' ').slice(2))], { cwd, timeoutMs: 120_000 });
  await Promise.all([
    npmInstall(`${install[0]} @hotkey/hub typescript @types/node`, app),
    // the README's node-redis install line
    nodeRedis && npmInstall(install[1]!, nodeRedisApp),
    npmInstall('npm install @hotkey/sdk iovalkey @types/node', valkeyApp),
  ]);
  const dirs = (dir: string) => readdirSync(join(dir, 'node_modules'));
  if (nodeRedis) assert.not.ok(dirs(nodeRedisApp).includes('ioredis'), 'the node-redis service installs no ioredis');
  assert.not.ok(dirs(valkeyApp).includes('ioredis'), 'the iovalkey service installs no ioredis');
  // what the install resolved to: the pins exactly (pnpm test), or today's newest (test:latest)
  const resolved: Record<Reported, string> = {
    ioredis: versionIn(app, 'ioredis'),
    redis: nodeRedis ? versionIn(nodeRedisApp, 'redis') : 'none',
    iovalkey: versionIn(valkeyApp, 'iovalkey'),
    ws: versionIn(app, 'ws'),
    typescript: versionIn(app, 'typescript'),
  };
  console.log(
    `# ${VERSIONS.mode}: ${Object.entries(resolved)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  for (const [name, version] of Object.entries(VERSIONS.expect))
    if (name !== 'redis' || nodeRedis) assert.is(resolved[name as Reported], version, `${name} resolved to the pin`);
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
        // a global install reads no project's .npmrc: the same settings as flags
        ...Object.entries(VERSIONS.npm).map(([k, v]) => `--${k}=${v}`),
        '--no-audit',
        '--no-fund',
      ],
      { cwd: work, timeoutMs: 120_000 },
    );
    return run(join(globalPrefix, 'bin', 'hotkey-hub'), ['--help'], { cwd: work, timeoutMs: 30_000 });
  };
  const [help, , , global, kit] = await Promise.all([
    run('npx', ['hotkey-hub', '--help'], { cwd: app, timeoutMs: 30_000 }),
    run(process.execPath, [tsc, '--noEmit', '-p', '.'], { cwd: ts, timeoutMs: 120_000 }).then(() =>
      // the app's compiler on the iovalkey project (module resolution is the project's own)
      run(process.execPath, [tsc, '--noEmit', '-p', '.'], { cwd: valkeyApp, timeoutMs: 120_000 }),
    ),
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
  const adapterCheck = (lib: 'ioredis' | 'iovalkey' | 'redis', cwd: string) =>
    run(process.execPath, ['adapter-check.mjs'], {
      cwd,
      timeoutMs: 30_000,
      env: { ...env, LIB: lib, KEY: `item:check:${lib}` },
    });
  const [esm, cjs, tsOut, nr, ...checks] = await Promise.all([
    run(process.execPath, ['service.mjs'], { cwd: join(app, 'esm'), timeoutMs: 30_000, env }),
    run(process.execPath, ['service.cjs'], { cwd: join(app, 'cjs'), timeoutMs: 30_000, env }),
    run(process.execPath, [join('out', 'service.js')], { cwd: ts, timeoutMs: 30_000, env }),
    nodeRedis ? run(process.execPath, ['service.js'], { cwd: nodeRedisApp, timeoutMs: 30_000, env }) : undefined,
    adapterCheck('ioredis', app),
    adapterCheck('iovalkey', valkeyApp),
    ...(nodeRedis ? [adapterCheck('redis', nodeRedisApp)] : []),
  ]);
  for (const check of checks) {
    const lib = /HOT READS LOCAL (\S+) (\S+)/.exec(check.stdout);
    assert.ok(lib, check.stdout);
    assert.is(lib[2], resolved[lib[1] as Reported], `the check ran on the installed ${lib[1]}`);
    assert.match(check.stdout, `WRITE SEEN AT ONCE ${lib[1]} ${lib[2]}`);
    assert.match(check.stdout, `OUTSIDE WRITE DROPPED ${lib[1]} ${lib[2]}`);
    console.log(`# adapter checks passed on ${lib[1]} ${lib[2]}`);
  }
  if (nr) {
    assert.match(nr.stdout, /SERVED LOCALLY item:nr: 200 reads, 0 GETs at Redis/);
    assert.match(nr.stdout, /SURGE UNDER A TRACKED PREFIX item:flash:nr: 51 reads, 1 GET at Redis, \d+ more/);
  }
  assert.match(esm.stdout, /PROMOTED item:esm/);
  assert.match(cjs.stdout, /PROMOTED item:cjs/);
  assert.match(tsOut.stdout, /PROMOTED item:42 \{"key":"item:42","name":"a thing"\}/);
  assert.match(tsOut.stdout, /hot key \{"key":"item:42"/);
  console.log(`# hub, type-check and consumers done in ${((Date.now() - installedAt) / 1000).toFixed(1)} s`);
});

test.run();
