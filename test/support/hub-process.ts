/**
 * The real `hotkey-hub` CLI as a child process, on 127.0.0.1 port 0 by default. `start` resolves
 * once the hub prints its `HOTKEY_READY {json}` line; every wait has a deadline. For runs that are
 * expected to exit (bad flags, bad config) use `runHubCli`.
 *
 *   const hub = await HubProcess.start({ args: ['--config', path] });
 *   new WebSocket(hub.url); fetch(`${hub.httpUrl}/healthz`);
 *   const { code } = await hub.stop(); // SIGTERM, graceful
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from './temp-dir.ts';

// Run with the test's own flags (`--conditions=@hotkey/source --import tsx` under test/run.mjs), the
// bin loads the hub from its TypeScript sources; with none, from hub/dist (as installed).
// HOTKEY_TEST_HUB_BIN runs the fault tests against another checkout's hub (before/after figures).
export const HUB_BIN =
  process.env.HOTKEY_TEST_HUB_BIN || fileURLToPath(new URL('../../hub/bin/hotkey-hub.js', import.meta.url));

/** Writes a hub config to a fresh temporary file and returns its path, for `--config`; removed when the test process exits. */
export function writeConfig(config: object, prefix = 'hotkey-config-'): string {
  const path = join(tempDir(prefix), 'hub.json');
  writeFileSync(path, JSON.stringify(config));
  return path;
}

export interface HubReady {
  id: string;
  port: number;
  /** ws:// URL of the SDK endpoint */
  url: string;
  /** http:// base URL of the API */
  http: string;
}

export interface HubProcessOptions {
  /** extra CLI flags; `--port 0` is added unless a port is given here or in env */
  args?: string[];
  /** extra environment (merged over process.env, with every HOTKEY_* variable removed first) */
  env?: Record<string, string>;
  /** start-up includes tsx and the dashboard bundle: slow on a loaded 2-core box @default 30000 */
  readyTimeoutMs?: number;
  /** the CLI to run (another checkout's, to compare) @default HUB_BIN */
  bin?: string;
  /** the hub's open-file limit (`ulimit -n` in a shell that then execs node), for descriptor-exhaustion tests */
  fdLimit?: number;
  /**
   * a launcher to run instead of `node <this process's flags> <bin>`, `args` after it: e.g.
   * `['npx', '@hotkey/hub']` in an app that installed the packed packages
   */
  command?: string[];
  /** the child's working directory @default this process's */
  cwd?: string;
  /** the child leads a process group of its own and `stop` signals the group (a launcher and the hub under it) */
  group?: boolean;
  /** environment variables dropped beside HOTKEY_* (e.g. /^(NODE_OPTIONS$|npm_)/ for a consumer's shell) */
  dropEnv?: RegExp;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

function childEnv(extra: Record<string, string> | undefined, drop?: RegExp): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('HOTKEY_') && !drop?.test(k)) env[k] = v;
  return { ...env, ...extra, FORCE_COLOR: '0', NO_COLOR: '1' };
}

export class HubProcess {
  readonly child: ChildProcess;
  readonly ready: HubReady;
  readonly exited: Promise<Exit>;
  readonly #group: boolean;
  #stdout: string;
  #stderr: string;

  private constructor(
    child: ChildProcess,
    ready: HubReady,
    exited: Promise<Exit>,
    out: { stdout: string; stderr: string },
    group: boolean,
  ) {
    this.child = child;
    this.#group = group;
    this.ready = ready;
    this.exited = exited;
    this.#stdout = out.stdout;
    this.#stderr = out.stderr;
    child.stdout!.on('data', (d) => (this.#stdout += d));
    child.stderr!.on('data', (d) => (this.#stderr += d));
  }

  get id(): string {
    return this.ready.id;
  }
  get port(): number {
    return this.ready.port;
  }
  get url(): string {
    return this.ready.url;
  }
  get httpUrl(): string {
    return this.ready.http;
  }
  get stdout(): string {
    return this.#stdout;
  }
  get stderr(): string {
    return this.#stderr;
  }

  static async start(options: HubProcessOptions = {}): Promise<HubProcess> {
    const args = [...(options.args ?? [])];
    if (!args.includes('--port') && options.env?.HOTKEY_PORT === undefined) args.push('--port', '0');
    const argv = [...process.execArgv, options.bin ?? HUB_BIN, ...args];
    const spawnOptions = {
      env: childEnv(options.env, options.dropEnv),
      stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'],
      cwd: options.cwd,
      detached: options.group === true,
    };
    const [launcher, ...launcherArgs] = options.command ?? [];
    const child =
      launcher !== undefined
        ? spawn(launcher, [...launcherArgs, ...args], spawnOptions)
        : options.fdLimit === undefined
          ? spawn(process.execPath, argv, spawnOptions)
          : // exec keeps the pid: signals and /proc/<pid> reach node itself
            spawn(
              '/bin/sh',
              ['-c', `ulimit -n ${Math.floor(options.fdLimit)} && exec "$0" "$@"`, process.execPath, ...argv],
              spawnOptions,
            );
    const group = options.group === true;
    const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const out = { stdout: '', stderr: '' };
    const timeoutMs = options.readyTimeoutMs ?? 30_000;
    try {
      const ready = await new Promise<HubReady>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`hotkey-hub not ready after ${timeoutMs} ms\n${out.stdout}${out.stderr}`)),
          timeoutMs,
        );
        child.stdout!.on('data', (d) => {
          out.stdout += d;
          const match = /^HOTKEY_READY (\{.*\})$/m.exec(out.stdout);
          if (match) {
            clearTimeout(timer);
            resolve(JSON.parse(match[1]!) as HubReady);
          }
        });
        child.stderr!.on('data', (d) => (out.stderr += d));
        child.once('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
        void exited.then(({ code, signal }) => {
          clearTimeout(timer);
          reject(new Error(`hotkey-hub exited (${code ?? signal}) before it was ready\n${out.stdout}${out.stderr}`));
        });
      });
      child.stdout!.removeAllListeners('data');
      child.stderr!.removeAllListeners('data');
      return new HubProcess(child, ready, exited, out, group);
    } catch (err) {
      signal(child, group, 'SIGKILL');
      throw err;
    }
  }

  /** Sends `signal` (graceful SIGTERM by default) and waits for the exit, SIGKILL after the deadline. */
  async stop(sig: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000): Promise<Exit> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.exited;
    signal(this.child, this.#group, sig);
    const timer = setTimeout(() => signal(this.child, this.#group, 'SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Signals the child, or with `group` its whole process group; one already gone is no error. */
function signal(child: ChildProcess, group: boolean, sig: NodeJS.Signals): void {
  if (!group || child.pid === undefined) {
    child.kill(sig);
    return;
  }
  try {
    process.kill(-child.pid, sig);
  } catch {
    // the group has exited
  }
}

/** Runs the CLI to completion (for runs expected to exit); kills it after `timeoutMs`. */
export async function runHubCli(
  args: string[],
  options: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Exit & { stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...process.execArgv, HUB_BIN, ...args], {
    env: childEnv(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 15_000);
  const exit = await new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  clearTimeout(timer);
  return { ...exit, stdout, stderr };
}
