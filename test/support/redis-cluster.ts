/**
 * A real 3-master Redis Cluster on 127.0.0.1 for integration tests and benchmarks: three
 * `redis-server --cluster-enabled yes` (nothing persisted, each in its own temporary directory),
 * joined by `redis-cli --cluster create … --cluster-replicas 0 --cluster-yes`, ready once every
 * node says `cluster_state:ok`. `stop()` kills them and removes the directories. Every wait has a
 * deadline. A node listens on its port and on its cluster bus port, 10000 above it, and aborts
 * when either is taken: each gets ports probed free, and other ones if it exits all the same.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { EPHEMERAL_ARGS, freePort } from './redis-server.ts';
import { delay, waitFor } from './wait.ts';

export class RedisCluster {
  readonly ports: readonly number[];
  readonly #dir: string;
  readonly #children: ChildProcess[];

  private constructor(ports: number[], dir: string, children: ChildProcess[]) {
    this.ports = ports;
    this.#dir = dir;
    this.#children = children;
  }

  /** Seed nodes as ioredis's `Cluster` takes them. */
  get nodes(): { host: string; port: number }[] {
    return this.ports.map((port) => ({ host: '127.0.0.1', port }));
  }

  static async start(opts: { masters?: number; timeoutMs?: number } = {}): Promise<RedisCluster> {
    const masters = opts.masters ?? 3;
    const timeoutMs = opts.timeoutMs ?? 30_000;
    const dir = mkdtempSync(join(tmpdir(), 'hotkey-rc-'));
    const ports: number[] = [];
    const children: ChildProcess[] = [];
    const cluster = new RedisCluster(ports, dir, children);
    try {
      for (let i = 0; i < masters; i++) ports.push(await startNode(dir, children, timeoutMs));
      const created = spawnSync(
        'redis-cli',
        ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
        { encoding: 'utf8', timeout: timeoutMs },
      );
      if (created.status !== 0)
        throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
      for (const port of ports) {
        await waitFor(
          `cluster_state:ok on ${port}`,
          () => cli(port, 'cluster', 'info').includes('cluster_state:ok'),
          timeoutMs,
        );
      }
    } catch (err) {
      console.error('# redis cluster start failed:', err); // uvu does not print errors thrown in hooks
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /**
   * One more master, joined by CLUSTER MEET and holding no slot (a node added after the clients
   * connected); its port. Not in `ports` (the masters the cluster was created with); stopped with
   * them. Its redis-cli calls never block this process (`run`).
   */
  async addMaster(timeoutMs = 30_000): Promise<number> {
    const port = await startNode(this.#dir, this.#children, timeoutMs);
    await run(port, 'cluster', 'meet', '127.0.0.1', String(this.ports[0]));
    const id = (await run(port, 'cluster', 'myid')).trim();
    const ids = await Promise.all(this.ports.map(async (p) => (await run(p, 'cluster', 'myid')).trim()));
    const everyNode = [...this.ports, port];
    const knows = async (at: number, id: string) =>
      (await run(at, 'cluster', 'nodes'))
        .split('\n')
        .some((line) => line.startsWith(`${id} `) && / connected/.test(line) && !/handshake|noaddr/.test(line));
    const all = async (checks: Promise<boolean>[]) => (await Promise.all(checks)).every(Boolean);
    await waitFor(
      `every node to know ${port}, and it them`,
      async () =>
        (await all(this.ports.map((p) => knows(p, id)))) && (await all(ids.map((other) => knows(port, other)))),
      timeoutMs,
    );
    await waitFor(
      `cluster_state:ok on ${everyNode.join(', ')}`,
      () => all(everyNode.map(async (p) => (await run(p, 'cluster', 'info')).includes('cluster_state:ok'))),
      timeoutMs,
    );
    return port;
  }

  /** `redis-cli -p <port> args…` on one node, its stdout (synchronous: for set-up and checks only). */
  cli(port: number, ...args: string[]): string {
    return cli(port, ...args);
  }

  /**
   * `cli` without blocking this process: its clients keep answering, renewing their leases and
   * heartbeats meanwhile, as a service's do while an operator reshards from elsewhere (a blocked
   * event loop of a second or more lets an SDK's hub lease lapse, and it then rightly serves
   * nothing locally).
   */
  run(port: number, ...args: string[]): Promise<string> {
    return run(port, ...args);
  }

  /** SIGSTOP the master on `port`: it keeps its connections and answers nothing (a frozen node). */
  pause(port: number): void {
    this.#children[this.ports.indexOf(port)]?.kill('SIGSTOP');
  }

  /** SIGCONT after `pause(port)`. */
  resume(port: number): void {
    this.#children[this.ports.indexOf(port)]?.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    for (const child of this.#children) child.kill('SIGKILL');
    await delay(50);
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

/** the highest port a cluster node may have: its cluster bus listens 10000 above it */
const MAX_NODE_PORT = 65535 - 10000;
/** ports tried for one node before giving up */
const NODE_ATTEMPTS = 5;

/** Whether nothing listens on 127.0.0.1:`port` (it could be bound just now). */
async function isFree(port: number): Promise<boolean> {
  const probe = createServer();
  try {
    probe.listen(port, '127.0.0.1');
    await once(probe, 'listening');
  } catch {
    return false;
  }
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return true;
}

/** A free port whose cluster bus port is free too: a node whose bus cannot bind aborts at start. */
async function nodePort(): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const port = await freePort();
    if (port <= MAX_NODE_PORT && (await isFree(port + 10_000))) return port;
  }
  throw new Error('no port with a free cluster bus port (+10000) found in 100 tries');
}

/**
 * Starts a cluster node (pushed on `children`) and resolves its port once that very process
 * answers (its `process_id`: another server that took the port meanwhile does not count). A node
 * that exits first — its port or bus port was taken between the probe and its bind — is replaced
 * by one on other ports, up to NODE_ATTEMPTS.
 */
async function startNode(dir: string, children: ChildProcess[], timeoutMs: number): Promise<number> {
  let failure = '';
  for (let attempt = 0; attempt < NODE_ATTEMPTS; attempt++) {
    const port = await nodePort();
    const child = spawnNode(dir, port);
    children.push(child);
    const exited = () => child.exitCode !== null || child.signalCode !== null;
    const up = await waitFor(
      `redis ${port} up`,
      async () => exited() || new RegExp(`^process_id:${child.pid}\\s*$`, 'm').test(await run(port, 'info', 'server')),
      timeoutMs,
    );
    if (up && !exited()) return port;
    failure = `redis-server on ${port} exited (${child.exitCode ?? child.signalCode})`;
  }
  throw new Error(`no cluster node started in ${NODE_ATTEMPTS} tries; the last: ${failure}`);
}

function spawnNode(dir: string, port: number): ChildProcess {
  const d = join(dir, String(port));
  mkdirSync(d, { recursive: true });
  return spawn(
    'redis-server',
    [
      '--port',
      String(port),
      ...EPHEMERAL_ARGS,
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      join(d, 'nodes.conf'),
      '--dir',
      d,
    ],
    { stdio: 'ignore' },
  );
}

function cli(port: number, ...args: string[]): string {
  return spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 5000 }).stdout ?? '';
}

function run(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve) =>
    execFile('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 5000 }, (_err, stdout) =>
      resolve(stdout ?? ''),
    ),
  );
}

/**
 * A test's client factories for a cluster started later (`rc` is read at each call): a Cluster
 * client, or a plain connection to one node, each pushed on `opened` for the test to disconnect.
 */
export function clientsOf(rc: () => RedisCluster, opened: (Cluster | Redis)[]) {
  const track = <C extends Cluster | Redis>(c: C): C => {
    opened.push(c);
    return c;
  };
  return {
    cluster: (): Cluster => track(new Cluster(rc().nodes, { redisOptions: { maxRetriesPerRequest: 1 } })),
    node: (port: number): Redis => track(new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 })),
  };
}
