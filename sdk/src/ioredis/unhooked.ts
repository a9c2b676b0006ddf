/**
 * Commands the ioredis adapter sends for its own features (shards, merged INCRBYs, probes) pass
 * the wrapper's hook untouched: not counted, not invalidated, not routed again. The hook reads
 * `hook.bypass`, which is true only while `unhooked(fn)` runs; ioredis builds and dispatches a
 * command synchronously inside its method, so no other command can slip in meanwhile.
 */
export const hook = { bypass: false, unguarded: false, plain: false };

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
  const outer = hook.unguarded;
  hook.unguarded = true;
  try {
    return unhooked(fn);
  } finally {
    hook.unguarded = outer;
  }
}

/**
 * The user's client is closing or closed (QUIT or disconnect() called, retries given up): the
 * adapter's own background commands (replica copies, probes) are not sent any more — written
 * behind a QUIT they would meet a closing socket (EPIPE) — and reject instead.
 */
export function isClosing(client: object): boolean {
  const c = client as { status?: string; manuallyClosing?: boolean };
  return c.manuallyClosing === true || c.status === 'end' || c.status === 'close' || c.status === 'disconnecting';
}

/**
 * Runs `fn` (ioredis's own `get` of a hot key, counted already by the GET fast path) with the
 * hook taking its command as a read hk does not cache: the core's plain read (redis/read/hot-read.ts),
 * held with the job's other GETs.
 */
export function asPlainRead<T>(fn: () => T): T {
  const outer = hook.plain; // nested (a plain read whose command re-enters a GET's fast path): the outer one stays plain
  hook.plain = true;
  try {
    return fn();
  } finally {
    hook.plain = outer;
  }
}
