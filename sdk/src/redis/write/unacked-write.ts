/**
 * What a wrapped write settles with when its invalidation failed. Redis applied the write, but
 * no owner hub acknowledged its invalidation, so instances may still serve the old value: the
 * write must not look acknowledged. It rejects with HK_ERR_UNACKED, its `cause` the invalidation's
 * error. After `hk.close()` the wrapped client is a plain client (nothing served locally here,
 * no guarantee claimed), so HK_ERR_CLOSED lets the write resolve as it always did.
 */
import { ErrorCode, HotKeyError } from '../../errors.ts';

/** The first failure among a write's invalidations that makes the write unacknowledged, or undefined. */
export function unackedWrite(failures: readonly unknown[], what: string): HotKeyError | undefined {
  const failure = failures.find(
    (err) => err !== undefined && !(err instanceof HotKeyError && err.code === ErrorCode.Closed),
  );
  if (failure === undefined) return undefined;
  const why = failure instanceof Error ? failure.message : String(failure);
  return new HotKeyError(
    ErrorCode.Unacked,
    `the write of ${what} was applied, but its invalidation was not acknowledged (${why}): other instances may serve the old value`,
    { cause: failure },
  );
}
