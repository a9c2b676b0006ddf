#!/usr/bin/env node
// The project's test command: type-check and lint, then every uvu test file in its own process,
// then one closing line `N passed, N failed` (uvu prints per-file totals only).
//
//   node test/run.mjs [--only unit|e2e|cluster|browser|fault|package|guides] [--jobs N] [--timeout S] [--no-typecheck]
//                     [--versions pinned|latest] [pattern]
//
// `--only` or a pattern runs those files alone (no typecheck, no lint); `--no-typecheck` skips both.
// `--versions latest` has the tests that install from the npm registry (test/package) install the
// newest releases instead of the pinned ones (test/support/client-versions.ts): `pnpm test:latest`.
//
// Unit tests live beside their source (`*/src/**/*.test.ts`), with test/bench and test/docs (the
// layout check of docs/internals/layout.md); integration tests under test/, the guides' examples
// (docs/guides/examples) under test/guides.
// Redis and Chromium are real: when missing and we are root with apt-get, they are installed.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import os from 'node:os';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    only: { type: 'string' },
    jobs: { type: 'string', default: String(Math.max(2, os.cpus().length)) },
    'no-typecheck': { type: 'boolean', default: false },
    timeout: { type: 'string', default: '240' },
    versions: { type: 'string', default: 'pinned' },
  },
});
if (values.versions !== 'pinned' && values.versions !== 'latest') {
  console.error(`--versions must be 'pinned' or 'latest', got '${values.versions}'`);
  process.exit(2);
}

const GROUPS = {
  unit: ['sdk/src', 'hub/src', 'dashboard/src', 'test/bench', 'test/docs'],
  e2e: ['test/e2e'],
  fault: ['test/fault'],
  cluster: ['test/cluster'],
  browser: ['test/browser'],
  package: ['test/package'],
  guides: ['test/guides'],
};

function findTests(dir) {
  const out = [];
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...findTests(path));
    else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out.sort();
}

const groups = values.only ? values.only.split(',') : Object.keys(GROUPS);
let files = groups.flatMap((g) => (GROUPS[g] ?? []).flatMap((d) => findTests(join(root, d))));
if (positionals.length) files = files.filter((f) => positionals.some((p) => relative(root, f).includes(p)));

function has(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}
function ensureSystemPackages() {
  const needRedis = groups.some((g) => g !== 'unit') && !has('redis-server');
  const needChromium = groups.includes('browser') && !existsSync('/usr/bin/chromium');
  const needOpenssl = groups.some((g) => g !== 'unit') && !has('openssl'); // TLS tests make certificates with it
  const missing = [needRedis && 'redis-server', needChromium && 'chromium', needOpenssl && 'openssl'].filter(Boolean);
  if (!missing.length) return;
  if (process.getuid?.() === 0 && has('apt-get')) {
    console.log(`# installing ${missing.join(' ')} with apt-get`);
    spawnSync(
      'sh',
      [
        '-c',
        `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${missing.join(' ')} >/dev/null`,
      ],
      { stdio: 'inherit' },
    );
  }
  for (const m of missing) {
    if (m === 'chromium' ? !existsSync('/usr/bin/chromium') : !has(m)) {
      console.error(`# ${m} is required by the integration tests and is not installed: apt-get install -y ${m}`);
    }
  }
}

let passed = 0;
let failed = 0;
const failures = [];

/** A whole-tree check (typecheck, lint) counts as one test; skipped when only some files run. */
function runCheck(name, script) {
  if (values['no-typecheck'] || values.only || positionals.length) return;
  const started = Date.now();
  const r = spawnSync('pnpm', ['-s', script], { cwd: root, encoding: 'utf8' });
  const ok = r.status === 0;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name} (${Date.now() - started} ms)`);
  if (ok) passed++;
  else {
    console.log((r.stdout + r.stderr).trim());
    failures.push(name);
    failed++;
  }
}

/**
 * uvu ends every run with `Total: N` (tests run, skips excluded) and `Passed: N`. A file that
 * crashed or hung before that summary, exited non-zero after it, or ran no test counts as one
 * failure.
 */
function tally(output, code) {
  const summary = [...output.matchAll(/^\s*Total:\s+(\d+)\s+Passed:\s+(\d+)$/gm)].at(-1);
  if (!summary) return { passed: 0, failed: 1 };
  const [total, passed] = [Number(summary[1]), Number(summary[2])];
  return { passed, failed: Math.max(total - passed, code !== 0 || total === 0 ? 1 : 0) };
}

function runFile(file) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['--conditions=@hotkey/source', '--import', 'tsx', file], {
      cwd: root,
      env: { ...process.env, HOTKEY_TEST_VERSIONS: values.versions, FORCE_COLOR: '0', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const limitMs = Number(values.timeout) * 1000;
    const timer = setTimeout(() => {
      output += `\n# killed: still running after ${values.timeout} s`;
      child.kill('SIGKILL');
    }, limitMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      const name = relative(root, file);
      const { passed: filePassed, failed: fileFailed } = tally(output, code);
      passed += filePassed;
      failed += fileFailed;
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      console.log(`${fileFailed ? 'FAIL' : 'ok  '} ${name} (${filePassed} passed, ${fileFailed} failed, ${secs} s)`);
      if (fileFailed) failures.push(name);
      if (fileFailed || process.env.VERBOSE) {
        console.log(
          output
            .split('\n')
            .map((l) => `  | ${l}`)
            .join('\n'),
        );
      }
      resolve();
    });
  });
}

ensureSystemPackages();
runCheck('typecheck', 'typecheck');
runCheck('lint', 'lint');
const queue = [...files];
const jobs = Math.max(1, Number(values.jobs));
await Promise.all(
  Array.from({ length: jobs }, async () => {
    while (queue.length) await runFile(queue.shift());
  }),
);
if (failures.length) console.log(`\nfailed: ${failures.join(', ')}`);
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
