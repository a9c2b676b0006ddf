/**
 * The one way tests wait: every wait names what it awaits and has a deadline, and a timeout says
 * both. Unit tests beside their source import it too (`../../test/support/wait.ts`), so it imports
 * nothing but Node's globals.
 *
 *   const event = await waitFor('the promotion in history', async () => (await history()).find(isPromote), 5000);
 *   await within('the browser to close', browser.close(), 5000);
 */

/**
 * Polls `check` every `everyMs` until it returns a truthy value, and resolves that value. Rejects
 * with `timed out after <timeoutMs> ms waiting for <what>` once the deadline passes (a check that
 * is itself still pending at the deadline counts as not met). An error thrown by `check` rejects
 * at once: a broken check is a failure, not a reason to keep polling.
 *
 * @param what names what is awaited, for the failure message
 * @param [timeoutMs=5000] deadline for the whole wait
 * @param [everyMs=10] pause between checks
 */
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  timeoutMs = 5000,
  everyMs = 10,
): Promise<NonNullable<T>> {
  const started = performance.now();
  const deadline = started + timeoutMs;
  const timedOut = () => new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
  for (;;) {
    const result = check();
    const value =
      result instanceof Promise
        ? await within(what, result, Math.max(0, deadline - performance.now()), timedOut)
        : result;
    if (value) return value as NonNullable<T>;
    if (performance.now() >= deadline) throw timedOut();
    await new Promise((resolve) => setTimeout(resolve, Math.min(everyMs, Math.max(0, deadline - performance.now()))));
  }
}

/**
 * `promise`, or a rejection naming `what` after `timeoutMs` (for a step that may hang: a start-up,
 * a close, one round trip). The timer is cleared either way.
 */
export async function within<T>(
  what: string,
  promise: Promise<T>,
  timeoutMs: number,
  error: () => Error = () => new Error(`timed out after ${timeoutMs} ms waiting for ${what}`),
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(error()), timeoutMs);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves after `ms`: for letting traffic run a known time, never as a substitute for `waitFor`. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
