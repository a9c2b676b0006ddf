/**
 * The ioredis side of the circuit breaker (redis/breaker/breaker.ts): which node a command or key is for
 * — the standalone client's `host:port`, or the Cluster master that owns the key's slot in the
 * client's slot map — how to PING a node past the hook (the client itself, or the Cluster's
 * connection to that master), and which errors are Redis's answers (ioredis's `ReplyError`).
 */
import type { Cluster, Redis } from 'ioredis';
import type { HotKeyClient } from '../client/client.ts';
import type { HotKeyError } from '../errors.ts';
import {
  Breakers as BreakerCore,
  breakerSettings,
  type BreakerOptions,
  type BreakerState,
  type BreakerStats,
  type NodeBreaker,
} from '../redis/breaker/breaker.ts';
import { exportBreakerMetrics as exportMetrics } from '../redis/breaker/breaker-metrics.ts';
import type { ReadGuard } from '../redis/read/hot-read.ts';
import { hashSlot } from '../redis/hash-slots.ts';
import { isClosing, unguarded } from './unhooked.ts';

type Client = Redis | Cluster;

/** The fields of an ioredis Command the breaker reads. */
interface Watched {
  name: string;
  promise: Promise<unknown>;
  getKeys: () => unknown[];
  resolve: (value: unknown) => unknown;
  reject: (error: Error) => unknown;
}

export class Breakers {
  readonly #client: Client;
  readonly #core: BreakerCore;
  readonly #isCluster: boolean;
  /** standalone: the one node */
  #single: NodeBreaker | undefined;

  constructor(client: Client, options: BreakerOptions, onChange: (node: string, state: BreakerState) => void) {
    this.#client = client;
    this.#isCluster = (client as Partial<Cluster>).isCluster === true;
    this.#core = new BreakerCore(
      breakerSettings(options)!,
      { ping: (node) => this.#ping(node), closing: () => isClosing(client), isAnswer: isReply },
      onChange,
    );
  }

  /** The breaker of the node serving `key` (standalone: the one node); undefined when unknown yet. */
  nodeFor(key: unknown): NodeBreaker | undefined {
    if (!this.#isCluster) {
      if (this.#single !== undefined) return this.#single;
      const o = (this.#client as Redis).options;
      this.#single = this.#core.node(`${o.host ?? 'localhost'}:${o.port ?? 6379}`);
      return this.#single;
    }
    if (typeof key !== 'string' && !(key instanceof Uint8Array)) return undefined;
    // bounded by the cluster's masters (and the nodes slots pointed at over time)
    const owner = (this.#client as Cluster).slots[hashSlot(key)]?.[0];
    return owner === undefined ? undefined : this.#core.node(owner);
  }

  /** The node of a command (its first key) */
  nodeOf(command: Watched): NodeBreaker | undefined {
    if (!this.#isCluster) return this.nodeFor(undefined);
    const keys = command.getKeys();
    return keys.length === 0 ? undefined : this.nodeFor(keys[0]);
  }

  /** Whether commands for `node` must fail fast now. */
  isOpen(node: NodeBreaker): boolean {
    return this.#core.isOpen(node);
  }

  /** The error a command or load gets while `node`'s breaker is open (counted). */
  reject(node: NodeBreaker): HotKeyError {
    return this.#core.reject(node);
  }

  /**
   * Counts `command`'s outcome against `node`: Redis's reply, when ioredis hands it over, not
   * the command's promise. A write's promise settles only after the hub acknowledged its
   * invalidation (redis/write/write-invalidation.ts), which a slow hub or an ownership fence holds
   * back for seconds after a healthy Redis answered. ioredis delivers a reply by calling the
   * command's `resolve` / `reject`; the write path replaces those in this same dispatch, so ours
   * go on top of them at the end of it (a microtask: before any reply can be read). The core
   * hears the reply synchronously there, before anything awaiting the command resumes. A
   * command settled before that (refused at once, a closed connection) is heard by its promise.
   */
  watch(node: NodeBreaker, command: Watched): void {
    if (!this.#core.sent(node, command, command.name.toLowerCase())) return;
    const core = this.#core;
    let heard = false;
    const hear = (ok: boolean, error?: unknown): void => {
      if (heard) return;
      heard = true;
      if (ok || isReply(error)) core.settled(node, command);
      else core.failed(node, command);
    };
    queueMicrotask(() => {
      if (heard) return;
      const { resolve, reject } = command;
      command.resolve = (value) => {
        hear(true);
        return resolve(value);
      };
      command.reject = (error) => {
        hear(false, error);
        return reject(error);
      };
    });
    command.promise.then(
      () => hear(true),
      (error: unknown) => hear(false, error),
    );
  }

  /**
   * `watch` for a command of the read path (a read, or a load's): nothing replaces its
   * resolve / reject after this, so ours go on at once, with no microtask and no promise
   * reaction of ours (every cold GET pays for what this costs). A command watched already (a
   * load of the caller's own read) keeps the pair it has.
   */
  watchRead(node: NodeBreaker, command: Watched): void {
    if (this.#core.watching(node, command) || !this.#core.sent(node, command, command.name)) return;
    const core = this.#core;
    const { resolve, reject } = command;
    command.resolve = (value) => {
      core.settled(node, command);
      return resolve(value);
    };
    command.reject = (error) => {
      if (isReply(error)) core.settled(node, command);
      else core.failed(node, command);
      return reject(error);
    };
  }

  /**
   * The read path's guard (redis/read/hot-read.ts `ReadGuard`): a cold read goes out, timed from now,
   * and its answer is heard through the settling functions the read path put on it already.
   */
  readonly guard: ReadGuard = {
    sent: (node, command) => {
      this.#core.sent(node as NodeBreaker, command, command.name);
    },
    answered: (node, command, failed, error) => {
      if (!failed || isReply(error)) this.#core.settled(node as NodeBreaker, command);
      else this.#core.failed(node as NodeBreaker, command);
    },
  };

  stats(): BreakerStats[] {
    return this.#core.stats();
  }

  /** PING to the node itself, past the wrapper's hook */
  #ping(node: string): Promise<unknown> {
    if (!this.#isCluster) return unguarded(() => (this.#client as Redis).ping());
    const conn = (this.#client as Cluster).nodes('master').find((n) => `${n.options.host}:${n.options.port}` === node);
    return conn === undefined ? Promise.reject(new Error('node left the cluster')) : conn.ping();
  }
}

/** A Redis error reply: the node is alive and answered. */
function isReply(err: unknown): boolean {
  return err instanceof Error && err.name === 'ReplyError';
}

/** Exports `breakers` as `ioredis_breaker_*` series (redis/breaker/breaker-metrics.ts) until `client` ends. */
export function exportBreakerMetrics(hk: HotKeyClient, client: Client, breakers: Breakers): void {
  exportMetrics(hk, 'ioredis', breakers, (ended) => client.once('end', ended));
}
