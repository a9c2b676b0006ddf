/**
 * Build step of @hotkey/dashboard: bundles the page once and writes dist/assets/index.html,
 * app.js and app.css, which the compiled package serves (see src/index.ts).
 *
 *   node --conditions=@hotkey/source --import tsx scripts/build-assets.ts
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { bundleDashboard } from '../src/bundle.ts';

const outDir = fileURLToPath(new URL('../dist/assets/', import.meta.url));
const files = await bundleDashboard({ minify: true });
await rm(outDir, { recursive: true, force: true });
await mkdir(outDir, { recursive: true });
for (const [name, file] of files) await writeFile(`${outDir}${name}`, file.body);
