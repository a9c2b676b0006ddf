/**
 * GET's fast path in the ioredis adapter: a hot hit resolves without building an ioredis Command
 * (~10x cheaper than the command path). It shares the core's record rules and tracked loads
 * (redis/read/hot-read.ts); everything it does not take is ioredis's own `get`, through the hook.
 */
import { adapterView } from '../client/adapter-view.ts';
import type { HotKeyClient } from '../client/client.ts';
import { fresh, PASSED, vouched, withTtl, type TrackedLoad } from '../redis/read/hot-read.ts';
import type { Rec } from '../redis/read/shared-records.ts';
import { UNTRACKED, type NodeTracker, type Tracking } from '../redis/tracking/tracking.ts';
import { MAX_KEY_LENGTH } from '../wire/protocol.ts';
import { inSubscriberMode, type Client } from './command.ts';
import { asPlainRead, unhooked } from './unhooked.ts';

/** What the wrapper lends the fast path. */
export interface HotGetContext {
  hk: HotKeyClient;
  /** the client's class prototype: ioredis's own `get` and `pttl` */
  base: Record<string | symbol, unknown>;
  tracking: Tracking | undefined;
  /** replica keys are on: a key with copies is read by the command path */
  replicas: boolean;
  namespaceOf(client: Client): string;
  loadBlocked(key: string): Error | undefined;
  /** whether `key` is a sharded counter here (write-hot.ts): its GET sums the shards */
  sharded(key: string): boolean;
  /** a `multi({ pipeline: false })` is open on the client: nothing is answered locally */
  inTransaction(client: Client): boolean;
  trackedLoad: TrackedLoad<Client>;
  /** no own `sendCommand` the hook has not met is on the client (layers.ts): GET's method may answer without a command */
  hookOnTop(): boolean;
}

/** runs ioredis's own method with the hook passing its command straight through */
function bypassing(client: Client, method: (...a: unknown[]) => unknown, args: unknown[]): unknown {
  return unhooked(() => method.apply(client, args));
}

/** GET's fast path, installed as the client's `get` method. */
export function hotGet(ctx: HotGetContext): (this: Client, ...args: unknown[]) => unknown {
  const { hk, base, tracking, namespaceOf, loadBlocked, sharded, inTransaction, trackedLoad, hookOnTop } = ctx;
  const view = adapterView(hk);
  const replicas = ctx.replicas;

  /**
   * The GET fast path's load of a hot key whose node's tracking is still connecting: tracked
   * once it is up, else (not up within tracking.ts's TRACKING_WAIT_MS) a plain GET + PTTL of our own (not cached).
   * Apart from get(): its loader closure must stay small (the hot GET's cost).
   */
  function getAfterTracking(node: NodeTracker, key: string, client: Client, args: unknown[], ns: string): Promise<Rec> {
    return node.firstLive().then(() => {
      const askedAt = performance.now();
      if (node.session.live) return trackedLoad(node.load.bind(node), 'get', key, client, ns, askedAt);
      const value = bypassing(client, base.get as (...a: unknown[]) => unknown, args) as Promise<unknown>;
      const ttl = bypassing(client, base.pttl as (...a: unknown[]) => unknown, args);
      const session = UNTRACKED;
      return withTtl(
        value.then((v): Rec => ({ ns, kind: 'string', value: v, expiresAt: undefined, session })),
        ttl,
        askedAt,
      );
    });
  }

  /**
   * GET's fast path for hot keys: a hit resolves without building an ioredis Command, the costly part.
   * Everything else — a cold key, a callback, a Buffer key or prefix, a client not ready, an own
   * `sendCommand` on the client that the hook has not met (layers.ts) — is
   * ioredis's own `get`, through the hook. Installed only without `showFriendlyErrorStack`, whose
   * stacks must start at the caller (this frame would come first).
   */
  function get(this: Client, ...args: unknown[]): unknown {
    const baseGet = base.get as (...a: unknown[]) => unknown;
    const arg = args[0];
    const prefix = this.options.keyPrefix;
    if (
      args.length !== 1 ||
      typeof arg !== 'string' ||
      (prefix !== undefined && typeof prefix !== 'string') ||
      this.status !== 'ready' ||
      inSubscriberMode(this) ||
      inTransaction(this) ||
      hk.limiting || // limits are checked on the command path
      !hookOnTop() // a stub or patch on the instance the hook has not met: it gets the command
    ) {
      return baseGet.apply(this, args);
    }
    const key = prefix ? prefix + arg : arg;
    if (key.length > MAX_KEY_LENGTH) return baseGet.apply(this, args);
    // one lookup: 0 not hot; more than 1 copy with replicas on: replica-served, by read()
    const copies = view.replicasOf(key);
    if (copies === 0 || (copies > 1 && replicas)) return baseGet.apply(this, args);
    if (sharded(key)) return baseGet.apply(this, args); // a sharded counter: GET sums its shards
    tracking?.reading(); // a client reading only hot keys (pushed values) is a reader too
    const ns = namespaceOf(this);
    let returned: unknown;
    let sent = false;
    let passed = false;
    const loaded = hk.get(key, (): Promise<Rec> => {
      const refused = loadBlocked(key);
      if (refused !== undefined) return Promise.reject(refused);
      if (view.uncachedLoad) {
        passed = true; // hk keeps no value (no lease): a plain GET, below
        return PASSED;
      }
      const askedAt = performance.now();
      const node = tracking?.nodeFor(key);
      if (node?.starting === true) return getAfterTracking(node, key, this, args, ns);
      if (node?.session.live) return trackedLoad(node.load.bind(node), 'get', key, this, ns, askedAt);
      const session = tracking === undefined ? undefined : UNTRACKED;
      sent = true;
      returned = bypassing(this, baseGet, args);
      const ttl = bypassing(this, base.pttl as (...a: unknown[]) => unknown, args); // same round trip
      return withTtl(
        (returned as Promise<unknown>).then(
          (value): Rec => ({ ns, kind: 'string', value, expiresAt: undefined, session }),
        ),
        ttl,
        askedAt,
      );
    });
    if (sent) return returned;
    if (passed) return asPlainRead(() => baseGet.apply(this, args));
    return loaded.then(
      (rec) => {
        if (rec.ns === ns && rec.kind === 'string' && fresh(rec) && vouched(rec)) return rec.value;
        if (!vouched(rec)) hk.dropLocal(key);
        return bypassing(this, baseGet, args);
      },
      () => bypassing(this, baseGet, args),
    );
  }

  return get;
}
