/**
 * A real redis-server (Debian's) on 127.0.0.1 at a free port, for integration tests and benchmarks.
 * Nothing is persisted; `stop()` ends it, `restart()` brings it back on the same port (to test a
 * Redis outage), and every wait has a deadline.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { once } from 'node:events';

/** loopback only, nothing persisted: every server the tests start */
export const EPHEMERAL_ARGS = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'];

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export class RedisServer {
  readonly port: number;
  /** extra redis-server arguments, e.g. TLS (`--port 0 --tls-port <port> …`) */
  readonly #args: string[];
  #child: ChildProcess | undefined;

  private constructor(port: number, args: string[] = []) {
    this.port = port;
    this.#args = args;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** the server process's pid (a restart makes a new one) */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** @param [opts.args] extra arguments, given the port: `(port) => ['--port', '0', '--tls-port', String(port), …]` serves TLS only */
  static async start(
    opts: { port?: number; timeoutMs?: number; args?: (port: number) => string[] } = {},
  ): Promise<RedisServer> {
    const port = opts.port ?? (await freePort());
    const server = new RedisServer(port, opts.args?.(port));
    await server.#spawn(opts.timeoutMs ?? 10_000);
    return server;
  }

  async #spawn(timeoutMs: number): Promise<void> {
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), ...EPHEMERAL_ARGS, '--loglevel', 'notice', ...this.#args],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.#child = child;
    let output = '';
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`redis-server on ${this.port} not ready after ${timeoutMs} ms: ${output}`)),
        timeoutMs,
      );
      const onData = (d: Buffer) => {
        output += d;
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(
          new Error(`cannot start redis-server (is it installed? apt-get install -y redis-server): ${err.message}`),
        );
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited with ${code}: ${output}`));
      });
    });
    try {
      await ready;
    } catch (err) {
      child.kill('SIGKILL'); // a server that never said it was ready must not outlive the test
      throw err;
    }
  }

  /** SIGKILL by default: an outage, not a shutdown. */
  async stop(signal: NodeJS.Signals = 'SIGKILL', timeoutMs = 5000): Promise<void> {
    const child = this.#child;
    if (!child || !this.running) return;
    const exited = once(child, 'exit', { signal: AbortSignal.timeout(timeoutMs) });
    child.kill(signal);
    await exited;
  }

  /** SIGSTOP: the server keeps its connections open and answers nothing (a frozen node). */
  pause(): void {
    if (this.running) this.#child!.kill('SIGSTOP');
  }

  /** SIGCONT after `pause()`. */
  resume(): void {
    if (this.running) this.#child!.kill('SIGCONT');
  }

  async restart(timeoutMs = 10_000): Promise<void> {
    await this.stop();
    await this.#spawn(timeoutMs);
  }
}
