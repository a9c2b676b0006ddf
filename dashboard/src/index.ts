/**
 * The dashboard as files a hub can serve: `buildDashboard()` bundles the page (TypeScript, CSS,
 * uPlot and the shared protocol / rules modules) with esbuild in memory, once per process, so the
 * page needs nothing from the internet and nothing is built ahead of time.
 *
 *   /               index.html
 *   /assets/app.js  the page script (ES module)
 *   /assets/app.css the page styles with uPlot's
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export interface DashboardFile {
  body: Uint8Array;
  /** Content-Type header value */
  type: string;
}

const APP_DIR = fileURLToPath(new URL('./app/', import.meta.url));

let cached: Promise<Map<string, DashboardFile>> | undefined;

/**
 * The page's files by URL path ('/', '/assets/app.js', '/assets/app.css'). Built on first call
 * (about 100 ms), then cached; a failed build is not cached, so the next call retries.
 * @param [opts.minify=true] minify script and styles
 */
export function buildDashboard(opts: { minify?: boolean } = {}): Promise<Map<string, DashboardFile>> {
  if (cached) return cached;
  const result = bundle(opts.minify ?? true);
  cached = result;
  result.catch(() => {
    if (cached === result) cached = undefined;
  });
  return result;
}

async function bundle(minify: boolean): Promise<Map<string, DashboardFile>> {
  const [out, html] = await Promise.all([
    build({
      entryPoints: { app: `${APP_DIR}main.ts` },
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'browser',
      target: ['chrome110', 'firefox115', 'safari16'],
      minify,
      sourcemap: false,
      outdir: '/assets',
      logLevel: 'silent',
      legalComments: 'none',
      // the protocol module's msgpackr import must take the browser build (no Node addon)
      conditions: ['browser'],
    }),
    readFile(`${APP_DIR}index.html`),
  ]);
  const files = new Map<string, DashboardFile>();
  files.set('/', { body: new Uint8Array(html), type: 'text/html; charset=utf-8' });
  for (const file of out.outputFiles) {
    const name = file.path.slice(file.path.lastIndexOf('/') + 1);
    const type = name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8';
    files.set(`/assets/${name}`, { body: file.contents, type });
  }
  return files;
}
