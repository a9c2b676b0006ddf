/**
 * `@hotkey/sdk/node-redis`, loaded by name at run time: the benchmarks and tests that use it run
 * their node-redis + hotkey parts where the adapter is built and report them as skipped, with the
 * reason, where it is not (the specifier is a variable so that the type-check passes either way).
 */
import type { HotKeyClient } from '@hotkey/sdk';

/** What the tests need of the adapter (the same options as the ioredis wrapper where they apply). */
export interface NodeRedisAdapter {
  withHotKeys<C extends object>(
    client: C,
    hk: HotKeyClient,
    options?: { onInvalidateError?: (error: unknown, key: string) => void; tracking?: { prefixes?: string[] } },
  ): C;
}

const SPECIFIER = '@hotkey/sdk/node-redis';
let loaded: Promise<NodeRedisAdapter | Error> | undefined;

/** The adapter, or the error that says why it cannot be loaded here. */
export function loadNodeRedisAdapter(): Promise<NodeRedisAdapter | Error> {
  loaded ??= import(SPECIFIER).then(
    (m: Partial<NodeRedisAdapter>) =>
      typeof m.withHotKeys === 'function' ? (m as NodeRedisAdapter) : new Error(`${SPECIFIER} exports no withHotKeys`),
    (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
  );
  return loaded;
}

/** Why the node-redis + hotkey parts cannot run here, or undefined when they can. */
export async function nodeRedisAdapterMissing(): Promise<string | undefined> {
  const a = await loadNodeRedisAdapter();
  return a instanceof Error
    ? `${SPECIFIER} not available: ${a.message.split('\n')[0]!.split(' imported from ')[0]}`
    : undefined;
}
