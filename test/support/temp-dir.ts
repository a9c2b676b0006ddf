/**
 * Temporary directories a test process removes when it exits, however its tests ended: for files
 * that must outlive the function that wrote them (a hub's config, read again on a reload; a
 * writer's log, read after the writer exits) and so have no natural place to be deleted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made = new Set<string>();

function removeAll(): void {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
  made.clear();
}

/** A fresh directory under the system's temp dir, named `<prefix>XXXXXX`; removed at process exit. */
export function tempDir(prefix: string): string {
  if (made.size === 0) process.once('exit', removeAll);
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}
