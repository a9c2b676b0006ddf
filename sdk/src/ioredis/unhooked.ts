/**
 * Commands the ioredis adapter sends for its own features (shards, merged INCRBYs, probes) pass
 * the wrapper's hook untouched: not counted, not invalidated, not routed again. The hook reads
 * `hook.bypass`, which is true only while `unhooked(fn)` runs; ioredis builds and dispatches a
 * command synchronously inside its method, so no other command can slip in meanwhile.
 */
export const hook = { bypass: false, unguarded: false };

export function unhooked<T>(fn: () => T): T {
  const outer = hook.bypass;
  hook.bypass = true;
  try {
    return fn();
  } finally {
    hook.bypass = outer;
  }
}

/** `unhooked`, and past the circuit breaker too: its own probe of a node it holds open. */
export function unguarded<T>(fn: () => T): T {
  hook.unguarded = true;
  try {
    return unhooked(fn);
  } finally {
    hook.unguarded = false;
  }
}
