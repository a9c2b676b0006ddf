/**
 * Timers created while it runs through the global timer functions by code whose files match
 * `from` (e.g. an adapter's folder, `/sdk\/(src|dist)\/ioredis\//`), judged by the caller's stack:
 * which are still pending, and how many intervals were set and cleared. `restore()` puts the
 * global functions back.
 */
export function timerLedger(from: RegExp) {
  const g = globalThis as Record<string, any>;
  const saved = { st: g.setTimeout, si: g.setInterval, ct: g.clearTimeout, ci: g.clearInterval };
  const live = new Set<unknown>();
  const counts = { intervals: 0, intervalsCleared: 0 };
  const ours = () => from.test(new Error().stack ?? '');
  g.setTimeout = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const mine = ours();
    const handle = saved.st(
      (...a: unknown[]) => {
        live.delete(handle);
        fn(...a);
      },
      ms,
      ...args,
    );
    if (mine) live.add(handle);
    return handle;
  };
  g.setInterval = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const handle = saved.si(fn, ms, ...args);
    if (ours()) {
      counts.intervals++;
      live.add(handle);
    }
    return handle;
  };
  g.clearTimeout = (handle: unknown) => {
    live.delete(handle);
    saved.ct(handle);
  };
  g.clearInterval = (handle: unknown) => {
    if (live.delete(handle)) counts.intervalsCleared++;
    saved.ci(handle);
  };
  return {
    live,
    counts,
    restore: () =>
      Object.assign(g, {
        setTimeout: saved.st,
        setInterval: saved.si,
        clearTimeout: saved.ct,
        clearInterval: saved.ci,
      }),
  };
}
