/**
 * docs/guides/get-loader.md: its example, docs/guides/examples/get-loader.ts, over a catalog
 * service of the test's (HTTP on 127.0.0.1, items in a Map, every request counted) and a real hub:
 * a hot item is answered from memory with no request to the catalog, and a write acknowledged on
 * one instance is the other's next read.
 */
import { test } from 'uvu';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { openItems, type Item } from '../../docs/guides/examples/get-loader.ts';
import { clientGuide } from './client-guide.ts';
import { guideFixture } from './fixture.ts';

const fx = guideFixture(test);
const items = new Map<string, string>();
let requests = 0;
let catalog: Server;
let catalogUrl = '';

test.before(async () => {
  catalog = createServer(async (req, res) => {
    requests++;
    const key = decodeURIComponent(req.url!.slice(1));
    if (req.method === 'PUT') {
      let body = '';
      for await (const chunk of req) body += chunk;
      items.set(key, body);
      res.writeHead(204).end();
    } else if (items.has(key)) res.writeHead(200, { 'content-type': 'application/json' }).end(items.get(key));
    else res.writeHead(404).end();
  });
  catalog.listen(0, '127.0.0.1');
  await once(catalog, 'listening');
  catalogUrl = `http://127.0.0.1:${(catalog.address() as { port: number }).port}`;
});

test.after(() => {
  catalog.closeAllConnections();
  catalog.close();
});

clientGuide<Item>(
  test,
  fx,
  'get-loader',
  () => openItems(catalogUrl, fx.hubUrl),
  (i) => ({ id: 'flash', price: 100 + i }),
  async () => requests,
);

test.run();
