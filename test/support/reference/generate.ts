/**
 * `pnpm docs:reference`: writes the generated sections of docs/reference/*.md from the code
 * (pages.ts). Exits 1, writing nothing, when the sources lack a doc or a `@default`, or a
 * `@default` disagrees with its defaults object.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate, rendered } from './pages.ts';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const started = performance.now();
const generated = await generate(root);
if (generated.problems.length > 0) {
  process.stderr.write(
    `docs:reference: fix the sources first:\n${generated.problems.map((p) => `  ${p}`).join('\n')}\n`,
  );
  process.exit(1);
}
for (const [path, sections] of generated.sections) writeFileSync(join(root, path), rendered(root, path, sections));
const ms = Math.round(performance.now() - started);
process.stdout.write(`docs:reference: ${generated.sections.size} pages written in ${ms} ms\n`);
