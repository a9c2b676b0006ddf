/**
 * docs/guides/nestjs.md: its example, docs/guides/examples/nestjs.ts, run as two service processes
 * (as a service runs it: tsx with the examples' tsconfig, experimentalDecorators on) over a real
 * redis-server and hub, hit over HTTP: a hot item read through @nestjs/cache-manager sends Redis no
 * command, and an item PUT on one service is the other's next GET.
 */
import { test } from 'uvu';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/redis-server.ts';
import { waitFor, within } from '../support/wait.ts';
import { clientGuide, type Opened } from './client-guide.ts';
import { guideFixture } from './fixture.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const fx = guideFixture(test);

interface Item {
  id: string;
  price: number;
}

/** One service process of the example, ready when it answers HTTP; `close()` sends SIGTERM and waits for its exit. */
async function service(): Promise<Opened<Item>> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    process.execPath,
    ['--conditions=@hotkey/source', '--import', 'tsx', 'docs/guides/examples/nestjs.ts'],
    {
      cwd: root,
      env: {
        ...process.env,
        PORT: String(port),
        REDIS_URL: fx.redisUrl,
        HOTKEY_HUB: fx.hubUrl,
        TSX_TSCONFIG_PATH: 'docs/guides/examples/tsconfig.json',
        NO_COLOR: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const url = `http://127.0.0.1:${port}/items`;
  const exited = once(child, 'exit');
  const close = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await within('the NestJS service to exit on SIGTERM', exited, 10_000).catch((err) => {
      child.kill('SIGKILL');
      throw err;
    });
  };
  try {
    await waitFor(
      `the NestJS service on ${port} to answer`,
      async () => {
        if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}: ${output}`);
        return (await fetch(`${url}/none`).catch(() => undefined))?.status === 404;
      },
      30_000,
      100,
    );
  } catch (err) {
    await close().catch(() => undefined);
    throw new Error(`${(err as Error).message}\n${output}`);
  }
  return {
    async get(id) {
      const res = await fetch(`${url}/${id}`);
      if (res.status === 404) return null;
      if (!res.ok) throw new Error(`GET ${id}: HTTP ${res.status}`);
      return (await res.json()) as Item;
    },
    async set(id, item) {
      const res = await fetch(`${url}/${id}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(item),
      });
      if (!res.ok) throw new Error(`PUT ${id}: HTTP ${res.status}`);
    },
    close,
  };
}

clientGuide(test, fx, 'nestjs', service, (i) => ({ id: 'flash', price: 100 + i }));

test.run();
