/**
 * The dashboard as files a hub can serve. The package's build bundles the page ahead of time into
 * dist/assets/ (scripts/build-assets.ts); `buildDashboard()` reads those files once per process.
 * Run from its TypeScript sources (inside the workspace, through tsx) it bundles in memory
 * instead, so a page edited in development is never served stale.
 *
 *   /               index.html
 *   /assets/app.js  the page script (ES module)
 *   /assets/app.css the page styles with uPlot's
 */
import { readFile } from 'node:fs/promises';

export interface DashboardFile {
  body: Uint8Array;
  /** Content-Type header value */
  type: string;
}

// the same directory from src/index.ts and from dist/index.js
const ASSETS = new URL('../dist/assets/', import.meta.url);
const FROM_SOURCE = import.meta.url.endsWith('.ts');
/** The files under assets/ and their Content-Type. */
export const ASSET_TYPES: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

let cached: Promise<Map<string, DashboardFile>> | undefined;

/**
 * The page's files by URL path ('/', '/assets/app.js', '/assets/app.css'). Read on first call,
 * then cached; a failed read is not cached, so the next call retries.
 * @param [opts.minify=true] minify script and styles (only when bundling from source)
 */
export function buildDashboard(opts: { minify?: boolean } = {}): Promise<Map<string, DashboardFile>> {
  if (cached) return cached;
  const result = (FROM_SOURCE ? bundleFromSource(opts.minify ?? true) : readAssets()).then(byUrlPath);
  cached = result;
  result.catch(() => {
    if (cached === result) cached = undefined;
  });
  return result;
}

async function readAssets(): Promise<Map<string, DashboardFile>> {
  const files = new Map<string, DashboardFile>();
  await Promise.all(
    Object.entries(ASSET_TYPES).map(async ([name, type]) => {
      files.set(name, { body: new Uint8Array(await readFile(new URL(name, ASSETS))), type });
    }),
  );
  return files;
}

type Bundler = { bundleDashboard(opts: { minify?: boolean }): Promise<Map<string, DashboardFile>> };

async function bundleFromSource(minify: boolean): Promise<Map<string, DashboardFile>> {
  // a computed specifier: the build neither follows nor ships the esbuild-based bundler
  const bundler = new URL('./bundle.ts', import.meta.url).href;
  const { bundleDashboard } = (await import(bundler)) as Bundler;
  return bundleDashboard({ minify });
}

function byUrlPath(files: Map<string, DashboardFile>): Map<string, DashboardFile> {
  const out = new Map<string, DashboardFile>();
  for (const [name, file] of files) out.set(name === 'index.html' ? '/' : `/assets/${name}`, file);
  return out;
}
