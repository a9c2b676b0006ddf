/**
 * Bundles the page with esbuild: TypeScript, CSS, uPlot and the shared protocol / rules modules,
 * so the page needs nothing from the internet. Used at build time (scripts/build-assets.ts writes
 * the result to dist/assets/) and, when the package runs from its TypeScript sources inside the
 * workspace, in memory at start-up. Never part of the published package (esbuild is a
 * devDependency).
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { ASSET_TYPES, type DashboardFile } from './index.ts';

const APP_DIR = fileURLToPath(new URL('./app/', import.meta.url));

/**
 * The page's files by name ('index.html', 'app.js', 'app.css').
 * @param [opts.minify=true] minify script and styles
 */
export async function bundleDashboard(opts: { minify?: boolean } = {}): Promise<Map<string, DashboardFile>> {
  const [out, html] = await Promise.all([
    build({
      entryPoints: { app: `${APP_DIR}main.ts` },
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'browser',
      target: ['chrome110', 'firefox115', 'safari16'],
      minify: opts.minify ?? true,
      sourcemap: false,
      outdir: '/assets',
      logLevel: 'silent',
      legalComments: 'none',
      // the protocol module's msgpackr import must take the browser build (no Node addon);
      // the sdk is bundled from its TypeScript sources, so no build order is needed
      conditions: ['browser', '@hotkey/source'],
    }),
    readFile(`${APP_DIR}index.html`),
  ]);
  const files = new Map<string, DashboardFile>();
  files.set('index.html', { body: new Uint8Array(html), type: ASSET_TYPES['index.html']! });
  for (const file of out.outputFiles) {
    const name = file.path.slice(file.path.lastIndexOf('/') + 1);
    const type = ASSET_TYPES[name];
    if (type === undefined) throw new Error(`unexpected dashboard bundle output ${name}`);
    files.set(name, { body: file.contents, type });
  }
  return files;
}
