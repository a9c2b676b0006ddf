/**
 * Checks every `withHotKeys` adapter (ioredis, node-redis) must pass alike, so the adapters'
 * tests assert one contract: a client is hooked by one HotKeyClient only, and a wrapped client
 * whose HotKeyClient was closed behaves as the plain client.
 */
import * as assert from 'uvu/assert';

interface Closable {
  close(): Promise<unknown>;
}

interface StringClient {
  get(key: string): Promise<unknown>;
  set(key: string, value: string): Promise<unknown>;
}

/** Wrapping `c` again with its own `hk` returns it as is; wrapping it with `other` is refused. Closes `other`. */
export async function assertHookedOnce<C, H extends Closable>(
  withHotKeys: (client: C, hk: H) => C,
  c: C,
  hk: H,
  other: H,
): Promise<void> {
  try {
    assert.is(withHotKeys(c, hk), c, 'the same HotKeyClient again: a no-op');
    assert.throws(
      () => withHotKeys(c, other),
      (e: Error) => e instanceof TypeError && /another HotKeyClient/.test(e.message),
    );
  } finally {
    await other.close();
  }
}

/**
 * Closes `own`, the HotKeyClient of `c`, whose `key` it served locally: `c` then reads what Redis
 * holds (written behind its back through `raw`) and writes unhindered.
 */
export async function assertPlainAfterClose(
  c: StringClient,
  raw: StringClient,
  own: Closable,
  key: string,
): Promise<void> {
  await own.close();
  await raw.set(key, 'b'); // behind the wrapper's back: only Redis knows
  assert.is(await c.get(key), 'b', 'nothing served locally any more');
  assert.is(await c.set(key, 'c'), 'OK');
  assert.is(await c.get(key), 'c');
}
