/**
 * One service process of the versus benchmark (versus.bench.ts): a node:http server over one store
 * (versus-systems.ts), the same code for every system. An item's value is `<version>:<padding>`;
 * the service answers a read with the version and the value's size only, so that the HTTP leg costs
 * the same for every system whatever the value's size, and Redis's leg carries the whole value.
 *
 *   GET /i/<key>                       200 `<version> <bytes>`, 404 when there is no such item
 *   PUT /i/<key>?v=<version>&n=<bytes> 204 once the store's write resolved (its acknowledgement);
 *                                      header `x-unconfirmed` when the system reported, by the time it
 *                                      resolved, that other instances may not have heard of it
 *   any failure                        500 with the error's name and message
 *
 *   <- { type: 'start', system, open }         -> { type: 'ready', port }
 *   <- { type: 'seed', zipfKeys, flashKey, flashBytes, itemBytes }   -> { type: 'seeded' }
 *   <- { type: 'usage' }                       -> { type: 'usage', cpuMs, served }
 *   <- { type: 'memory' }                      -> { type: 'memory', rss, heap, entries }  (heap after full GCs)
 *   <- { type: 'stop' }                        closes the store and exits
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import { fromParent, settledHeapAfterGc, toParent } from './harness.ts';
import { describeError } from './redis-clients.ts';
import { openStore, type OpenOptions, type SystemName } from './versus-systems.ts';

const PREFIX = '/i/';
const pads = new Map<number, string>();
/** `<version>:` and `bytes` of padding in all; the paddings are shared, as a service's values would be */
function itemValue(version: number, bytes: number): string {
  const head = `${version}:`;
  const n = Math.max(0, bytes - head.length);
  let pad = pads.get(n);
  if (pad === undefined) {
    pad = 'x'.repeat(n);
    pads.set(n, pad);
  }
  return head + pad;
}

const start = await fromParent<{ system: SystemName; open: OpenOptions }>('start', 60_000);
const store = await openStore(start.system, start.open);
let served = 0;

function fail(res: ServerResponse, err: unknown): void {
  if (res.headersSent) return;
  res.writeHead(500, { 'content-type': 'text/plain' }).end(describeError(err).slice(0, 200));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://service');
  if (!url.pathname.startsWith(PREFIX)) {
    res.writeHead(404).end();
    return;
  }
  const key = decodeURIComponent(url.pathname.slice(PREFIX.length));
  if (req.method === 'GET') {
    const value = await store.get(key);
    if (value === null) res.writeHead(404).end();
    else
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`${value.slice(0, value.indexOf(':'))} ${value.length}`);
    return;
  }
  if (req.method === 'PUT') {
    const version = Number(url.searchParams.get('v'));
    const bytes = Number(url.searchParams.get('n') ?? 0);
    if (!Number.isSafeInteger(version) || !Number.isSafeInteger(bytes) || bytes < 0)
      throw new TypeError(`bad write of ${key}: v=${url.searchParams.get('v')} n=${url.searchParams.get('n')}`);
    const sure = await store.set(key, itemValue(version, bytes));
    res.writeHead(204, sure ? {} : { 'x-unconfirmed': '1' }).end();
    return;
  }
  res.writeHead(405).end();
}

const server = createServer((req, res) => {
  served++;
  req.resume(); // no request has a body worth reading
  handle(req, res).catch((err: unknown) => fail(res, err));
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1');
await once(server, 'listening');
toParent({ type: 'ready', port: (server.address() as { port: number }).port });

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

for (;;) {
  const m = await fromParent<{
    type: string;
    op: 'seed' | 'usage' | 'memory' | 'stop';
    zipfKeys: number;
    flashKey: string;
    flashBytes: number;
    itemBytes: number;
  }>('op', 3_600_000);
  if (m.op === 'seed') {
    const entries: Array<[string, string]> = [[m.flashKey, itemValue(0, m.flashBytes)]];
    for (let i = 0; i < m.zipfKeys; i++) entries.push([`item:${i}`, itemValue(0, m.itemBytes)]);
    await store.seed(entries);
    toParent({ type: 'seeded' });
  } else if (m.op === 'usage') toParent({ type: 'usage', cpuMs: cpuMs(), served });
  else if (m.op === 'memory')
    toParent({
      type: 'memory',
      rss: process.memoryUsage().rss,
      heap: await settledHeapAfterGc(),
      entries: store.entries(),
    });
  else break;
}
server.closeAllConnections();
server.close();
await Promise.race([store.close().catch(() => undefined), new Promise((r) => setTimeout(r, 3000))]);
process.exit(0);
