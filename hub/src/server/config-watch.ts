/**
 * `--watch-config`: reload when the config file (or a TLS file) changes, as SIGHUP would.
 *
 * `fs.watchFile` polls each path's stat rather than using inotify (`fs.watch`): editors and
 * secret managers replace files by renaming a new one over them, which an inotify watch on the old
 * inode misses, while a stat of the path sees it. Changes closer together than `settleMs` (a
 * certificate and its key written one after the other) give one reload.
 */
import { unwatchFile, watchFile, type Stats } from 'node:fs';

export interface ConfigWatchOptions {
  /** how often each file's stat is read @default 1000 */
  intervalMs?: number;
  /** quiet time after the last change before `onChange` runs @default 300 */
  settleMs?: number;
}

/** Calls `onChange` once the files at `paths` settle after a change; returns a function that stops watching. */
export function watchConfigFiles(
  paths: readonly string[],
  onChange: () => void,
  options: ConfigWatchOptions = {},
): () => void {
  const interval = options.intervalMs ?? 1000;
  const settleMs = options.settleMs ?? 300;
  let timer: NodeJS.Timeout | undefined;
  const listener = (now: Stats, before: Stats) => {
    if (now.mtimeMs === before.mtimeMs && now.size === before.size && now.ino === before.ino) return;
    clearTimeout(timer);
    timer = setTimeout(onChange, settleMs);
    timer.unref();
  };
  const unique = [...new Set(paths)];
  for (const path of unique) watchFile(path, { interval, persistent: false }, listener);
  return () => {
    clearTimeout(timer);
    for (const path of unique) unwatchFile(path, listener);
  };
}
