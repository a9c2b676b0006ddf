/**
 * The node-redis side of the circuit breaker (redis/breaker/breaker.ts). Its hook is a layer under the
 * adapter's own (`client → hooked → breaker layer → RedisClient.prototype`): every command and
 * batch that reaches Redis through a hooked client — the caller's, and the ones the read path
 * and write invalidation send — passes `sendCommand`, `_executeMulti` or `_executePipeline`
 * there, so each is rejected at once with HK_ERR_BREAKER_OPEN while its node's breaker is open,
 * or else watched until Redis answers. A hot GET answered from the cache never gets this far;
 * one that must load is refused here (or, through tracking, by `loadBlocked`), which is the
 * rejection stale-if-error serves the last value on.
 *
 * Nodes: a standalone client (and every client of a pool) is its deployment's one node; a
 * Cluster's node client is the master (or replica) whose client it is, `host:port` as the slot
 * map names it. The probe PINGs a node through the last of its clients a command was meant for,
 * past both hooks. Redis's error replies (node-redis's `ErrorReply` and its subclasses) and a
 * WATCH that aborted an EXEC are the node answering. Commands on a client that is not open are
 * left alone: node-redis rejects them itself (ClientClosedError), and a closed client says
 * nothing about its node. A client reconnecting (its server killed) queues commands offline:
 * those are watched like any, and once its node is open the hook serves hot keys from memory
 * again (client-hook.ts asks `isOpenFor`), as it does while the client is ready.
 */
import type { HotKeyClient } from '../client/client.ts';
import {
  Breakers,
  waitsByDesign,
  type BreakerOptions,
  type BreakerStats,
  type NodeBreaker,
} from '../redis/breaker/breaker.ts';
import { exportBreakerMetrics } from '../redis/breaker/breaker-metrics.ts';
import type { RedisCommand } from '../redis/command.ts';
import type { ReadGuard } from '../redis/read/hot-read.ts';
import { hashSlot } from '../redis/hash-slots.ts';
import { commandName } from './command-name.ts';
import type { NodeRedisLike } from './connection.ts';

type Proto = Record<string | symbol, unknown>;
type Fn = (...args: unknown[]) => unknown;

/** A client as the layer sees it: `this` of its methods, maybe a proxy of the client (`_self`). */
interface LayerClient extends NodeRedisLike {
  readonly _self?: LayerClient;
}

/** A Cluster's node as node-redis lists it (`masters`, `replicas`, each slot's `master`). */
interface ClusterNode {
  readonly host: string;
  readonly port: number;
  readonly address?: string;
  readonly client?: { readonly _self?: object } | undefined;
}

/** What the breaker reads of a node-redis Cluster (v5 and v6). */
interface ClusterView {
  readonly masters: readonly ClusterNode[];
  readonly replicas?: readonly ClusterNode[];
  readonly slots: ReadonlyArray<{ master?: ClusterNode } | undefined>;
}

export interface NodeRedisBreakerOptions {
  hk: HotKeyClient;
  /** the `breaker` option, checked (redis/wrap-options.ts); undefined: no breaker */
  settings: Required<BreakerOptions> | undefined;
  /** a standalone client's or pool's one node (its deployment) */
  deployment: string;
  /** the wrapped Cluster, whose node clients are its masters' */
  cluster: object | undefined;
  /** calls back once when the wrapped client ends (its metrics go with it) */
  untilEnd(ended: () => void): void;
}

const nameOf = (n: ClusterNode): string => n.address ?? `${n.host}:${n.port}`;

/** node-redis's `ErrorReply` family, or its WatchError: the node answered (the library is not imported, so by class name) */
function isAnswer(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  for (let p = Object.getPrototypeOf(error) as object | null; p !== null && p !== Error.prototype; ) {
    const name = (p as { constructor?: { name?: unknown } }).constructor?.name;
    if (name === 'ErrorReply' || name === 'WatchError') return true;
    p = Object.getPrototypeOf(p) as object | null;
  }
  return false;
}

const lower = commandName;

export class NodeRedisBreaker {
  readonly #core: Breakers;
  readonly #cluster: ClusterView | undefined;
  /** standalone and pools: the one node */
  readonly #single: NodeBreaker | undefined;
  /** a Cluster's node clients, by the node they serve */
  readonly #nodeOf = new WeakMap<object, NodeBreaker>();
  /** the class's methods under the layer, per hooked client */
  readonly #bases = new WeakMap<object, Proto>();
  /** per node, the last client a command for it was meant for: the probe's way there */
  readonly #via = new Map<string, LayerClient>();
  /** the node and client `#via` was last told (a command per client in a row tells it nothing new) */
  #viaNode: NodeBreaker | undefined;
  #viaClient: LayerClient | undefined;
  /** the read path's cold read on its way down to the layer (`guard.sent`): timed there, heard by the read path */
  #readAbove: RedisCommand | undefined;

  /**
   * The read path's guard (redis/read/hot-read.ts `ReadGuard`): a cold read it sends is timed by the
   * layer as it passes, and its answer heard through the settling functions the read path put on
   * it, not by a reaction of ours to the reply's promise (a second price per cold read).
   */
  readonly guard: ReadGuard = {
    sent: (_node, command) => {
      this.#readAbove = command;
    },
    answered: (node, command, failed, error) => {
      if (!failed || isAnswer(error)) this.#core.settled(node as NodeBreaker, command);
      else this.#core.failed(node as NodeBreaker, command);
    },
  };

  constructor(o: NodeRedisBreakerOptions & { settings: Required<BreakerOptions> }) {
    const { hk } = o;
    this.#core = new Breakers(
      o.settings,
      { ping: (node) => this.#ping(node), closing: (node) => this.#via.get(node)?.isOpen === false, isAnswer },
      (node, state) => hk.emit('breaker', { node, state }),
    );
    this.#cluster = o.cluster as ClusterView | undefined;
    this.#single = o.cluster === undefined ? this.#core.node(o.deployment) : undefined;
    exportBreakerMetrics(hk, 'node_redis', this.#core, o.untilEnd);
  }

  /**
   * Puts the breaker's layer under `real` (a node-redis client's `_self`, before the adapter's
   * own hook goes on) and returns it: the prototype the adapter's hook sends through.
   */
  layer(real: object): Proto {
    const base = Object.getPrototypeOf(real) as Proto;
    this.#bases.set(real, base);
    const breaker = this;
    const value = (fn: Fn): PropertyDescriptor => ({ value: fn, writable: true, configurable: true });
    const layer = Object.create(base, {
      // every command: no closure per call
      sendCommand: value(function sendCommand(this: LayerClient, argv: unknown, options?: unknown) {
        // the read path's own cold read, when this is it (its guard told us just before sending)
        const above = breaker.#readAbove;
        breaker.#readAbove = undefined;
        // ASKING + command and handshakes are sent as one chain: not split by a rejection
        const chained = (options as { chainId?: unknown } | undefined)?.chainId !== undefined;
        const node = !Array.isArray(argv) || argv.length === 0 || chained ? undefined : breaker.#gateNode(this);
        if (node === undefined) return (base.sendCommand as Fn).call(this, argv, options);
        if (breaker.#core.isOpen(node)) return Promise.reject(breaker.#core.reject(node));
        const sent = (base.sendCommand as Fn).call(this, argv, options) as Promise<unknown>;
        if (above !== undefined && (above as { argv?: unknown }).argv === argv)
          breaker.#core.sent(node, above, above.name);
        else breaker.#core.watch(node, lower((argv as unknown[])[0]), sent);
        return sent;
      }),
      _executeMulti: value(function _executeMulti(this: LayerClient, ...args: unknown[]) {
        return breaker.#gate(this, 'exec', () => (base._executeMulti as Fn).apply(this, args) as Promise<unknown>);
      }),
      _executePipeline: value(function _executePipeline(this: LayerClient, ...args: unknown[]) {
        // a pipeline's blocking command blocks the pipeline (inside MULTI it would not)
        const commands = args[0] as ReadonlyArray<{ args: readonly unknown[] }> | undefined;
        const waits = Array.isArray(commands) && commands.some((c) => waitsByDesign(lower(c.args[0])));
        const send = () => (base._executePipeline as Fn).apply(this, args) as Promise<unknown>;
        return breaker.#gate(this, waits ? 'blpop' : 'exec', send);
      }),
    }) as Proto;
    Object.setPrototypeOf(real, layer);
    return layer;
  }

  /**
   * A pool's task (`execute(fn)` runs `fn` on a client it lends): rejected at once while the
   * pool's node is open, without taking a client; else watched while it waits for one, so that
   * commands queued behind a pool whose clients are all stuck count as unanswered too (from the
   * moment `fn` runs, its commands are watched on the client it got).
   */
  poolTask(execute: (fn: Fn) => unknown, fn: Fn): unknown {
    const node = this.#single!;
    if (this.#core.isOpen(node)) return Promise.reject(this.#core.reject(node));
    const task = {};
    this.#core.sent(node, task, 'pool');
    const done = execute((...args: unknown[]) => {
      this.#core.passed(node, task);
      return fn(...args);
    });
    // no client lent (the pool is closed, or could not make one): a failure to reach the node
    if (done instanceof Promise) done.catch(() => this.#core.failed(node, task));
    return done;
  }

  /** The breaker of the node `client` sends to (undefined: not one of a Cluster's node clients yet). */
  nodeOf(client: object): NodeBreaker | undefined {
    return this.#single ?? this.#clientNode((client as LayerClient)._self ?? client);
  }

  /** Whether the breaker of `client`'s node is open (or half-open). */
  isOpenFor(client: object): boolean {
    const self = (client as LayerClient)._self ?? client;
    const node = this.#single ?? this.#nodeOf.get(self);
    return node !== undefined && this.#core.isOpen(node);
  }

  /** The error a load of `key` fails with at once: its node's breaker is open. */
  loadBlocked(key: string): Error | undefined {
    const node = this.#single ?? this.#keyNode(key);
    return node !== undefined && this.#core.isOpen(node) ? this.#core.reject(node) : undefined;
  }

  stats(): BreakerStats[] {
    return this.#core.stats();
  }

  /**
   * A batch: rejected at once while the node of `client` is open; else sent and watched. (A
   * command, the layer's `sendCommand`, does the same without a closure; the read path's cold
   * read is heard there by the read path's settling functions, `guard`, not by its promise.)
   */
  #gate(client: LayerClient, name: string, send: () => Promise<unknown>): Promise<unknown> {
    const node = this.#gateNode(client);
    if (node === undefined) return send();
    if (this.#core.isOpen(node)) return Promise.reject(this.#core.reject(node));
    const sent = send();
    this.#core.watch(node, name, sent);
    return sent;
  }

  /**
   * The node whose breaker gates `client`'s commands, remembered as the way to probe it;
   * undefined when they pass unwatched (a client not open: node-redis rejects them itself; a
   * Cluster's client not known yet).
   */
  #gateNode(client: LayerClient): NodeBreaker | undefined {
    const self = client._self ?? client;
    if (self.isOpen === false) return undefined;
    const node = this.#single ?? this.#clientNode(self);
    if (node === undefined) return undefined;
    if (node !== this.#viaNode || self !== this.#viaClient) {
      this.#via.set(node.node, self);
      this.#viaNode = node;
      this.#viaClient = self;
    }
    return node;
  }

  /** The Cluster node `client` is the client of (remembered once found). */
  #clientNode(client: object): NodeBreaker | undefined {
    const known = this.#nodeOf.get(client);
    if (known !== undefined) return known;
    const cluster = this.#cluster!;
    const of = (n: ClusterNode) => n.client !== undefined && (n.client === client || n.client._self === client);
    const found = cluster.masters.find(of) ?? cluster.replicas?.find(of);
    if (found === undefined) return undefined; // not one of its nodes' clients (yet): not watched
    const node = this.#core.node(nameOf(found));
    this.#nodeOf.set(client, node);
    return node;
  }

  /** The breaker of the master serving `key`, if a command for it was seen. */
  #keyNode(key: string): NodeBreaker | undefined {
    const master = this.#cluster!.slots[hashSlot(key)]?.master;
    return master === undefined ? undefined : this.#core.known(nameOf(master));
  }

  /** PING to `node` on the last client a command for it was meant for, past both hooks. */
  #ping(node: string): Promise<unknown> {
    const client = this.#via.get(node);
    const base = client === undefined ? undefined : this.#bases.get(client);
    if (client === undefined || base === undefined) return Promise.reject(new Error(`no client of ${node} to probe`));
    return (base.sendCommand as Fn).call(client, ['PING']) as Promise<unknown>;
  }
}

/** The breaker of one `withHotKeys` call (its `breaker` option, checked), or undefined with `breaker: false`. */
export function nodeRedisBreaker(o: NodeRedisBreakerOptions): NodeRedisBreaker | undefined {
  const settings = o.settings;
  return settings === undefined ? undefined : new NodeRedisBreaker({ ...o, settings });
}
