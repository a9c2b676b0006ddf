/**
 * Commands the ioredis adapter sends for its own features (shards, merged INCRBYs, probes) pass
 * the wrapper's hook untouched: not counted, not invalidated, not routed again. The hook reads
 * `hook.bypass`, which is true only while `unhooked(fn)` runs; ioredis builds and dispatches a
 * command synchronously inside its method, so no other command can slip in meanwhile.
 */
export const hook = { bypass: false };

export function unhooked<T>(fn: () => T): T {
  const outer = hook.bypass;
  hook.bypass = true;
  try {
    return fn();
  } finally {
    hook.bypass = outer;
  }
}
