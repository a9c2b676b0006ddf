/**
 * Where a V8 CPU profile spends its time: self time per function (and per file), top first.
 *
 *   node --import tsx test/bench/profile-summary.ts <file.cpuprofile> [top=25]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: profile-summary.ts <file.cpuprofile> [top]');
  process.exit(2);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

const short = (url: string) =>
  url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\/\.pnpm\/([^/]+)\/node_modules\//, '$1:')
    .replace('/work/main/', '');
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
let total = 0;
for (const [id, us] of selfUs) {
  const node = byId.get(id)!;
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url ? `${short(url)}:${lineNumber + 1}` : '';
  const name = `${functionName || '(anonymous)'} ${where}`.trim();
  byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  const fileKey = url ? short(url) : functionName;
  byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + us);
  total += us;
}
const print = (title: string, m: Map<string, number>) => {
  console.log(`\n${title} (total ${(total / 1000).toFixed(0)} ms)`);
  for (const [name, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${name}`);
  }
};
print('self time by function', byFunction);
print('self time by file', byFile);
