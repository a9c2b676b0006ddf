/**
 * A circuit breaker per Redis node (the standalone server, or each Cluster master), so that a
 * dead or frozen node costs callers nothing once it is known to be down (the circuit-breaker
 * pattern of Nygard's "Release It!"; defaults: 5 failures → open for 3 s). After `failures` consecutive failures — a connection error, or a command still
 * unanswered after `timeoutMs` — the node's breaker opens: commands for it are rejected at once
 * with HK_ERR_BREAKER_OPEN instead of queueing, and a hot key's load rejects the same way, which
 * lets the client serve its last value (stale-if-error). After `coolDownMs` the breaker goes
 * half-open and sends one PING of its own (user commands still fail fast meanwhile): an answer
 * within `timeoutMs` closes it, anything else opens it for another cool-down.
 *
 * A Redis error reply (WRONGTYPE, NOSCRIPT …) is the node answering: a success. A command that
 * timed out is counted once, when it passes `timeoutMs`, and not again when it settles.
 * Unanswered commands are found by a timer that looks at each node's oldest command in flight
 * (every timeoutMs / 4), not by a timer per command. That timer exists only while a command is in
 * flight: an idle or closed client keeps no timer of ours (a test counting the process's timers,
 * or waiting for the event loop to empty, sees what it would see on a plain client), and it is a
 * one-shot timeout re-armed by each sweep, never an interval.
 */
import type { Cluster, Redis } from 'ioredis';
import type { HotKeyClient } from '../client/client.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import { registerMetricsSource, type MetricSample } from '../client/metrics.ts';
import { keySlot } from '../redis/slots.ts';
import { isClosing, unguarded } from './unhooked.ts';

type Client = Redis | Cluster;

export interface BreakerOptions {
  /** consecutive failures or timeouts that open a node's breaker @default 5 */
  failures?: number;
  /** how long it stays open before a probe @default 3000 */
  coolDownMs?: number;
  /** a command unanswered this long counts as a failure; also the probe's deadline @default 1000 */
  timeoutMs?: number;
}

/** commands that wait by design (BLPOP 0, XREAD BLOCK …): never counted as timed out */
const WAITS: ReadonlySet<string> = new Set([
  'blpop',
  'brpop',
  'brpoplpush',
  'blmove',
  'blmpop',
  'bzpopmin',
  'bzpopmax',
  'bzmpop',
  'xread',
  'xreadgroup',
  'wait',
  'waitaof',
]);

export const BREAKER_DEFAULTS: Required<BreakerOptions> = { failures: 5, coolDownMs: 3000, timeoutMs: 1000 };

export type BreakerState = 'closed' | 'open' | 'half-open';

export interface BreakerStats {
  /** `host:port` of the node */
  node: string;
  state: BreakerState;
  /** failures and timeouts counted, in all */
  failures: number;
  /** times it opened */
  opened: number;
  /** commands and loads rejected while it was open or half-open */
  rejected: number;
}

/** The fields of an ioredis Command the breaker reads. */
interface Watched {
  name: string;
  promise: Promise<unknown>;
  getKeys: () => unknown[];
}

class NodeBreaker {
  readonly node: string;
  state: BreakerState = 'closed';
  consecutive = 0;
  failures = 0;
  opened = 0;
  rejected = 0;
  /** commands in flight, oldest first, with the time they were sent */
  readonly inflight = new Map<object, number>();

  constructor(node: string) {
    this.node = node;
  }
}

export class Breakers {
  readonly #client: Client;
  readonly #opts: Required<BreakerOptions>;
  readonly #onChange: (node: string, state: BreakerState) => void;
  readonly #nodes = new Map<string, NodeBreaker>();
  readonly #isCluster: boolean;
  /** standalone: the one node */
  #single: NodeBreaker | undefined;
  /** commands counted as timed out: their late settlement is not counted again */
  readonly #timedOut = new WeakSet<object>();
  #sweeper: ReturnType<typeof setTimeout> | undefined;
  /** commands in flight on every node (the sweeper runs while this is above 0) */
  #inflight = 0;

  constructor(client: Client, options: BreakerOptions, onChange: (node: string, state: BreakerState) => void) {
    const opts = { ...BREAKER_DEFAULTS, ...options };
    for (const [name, min] of [
      ['failures', 1],
      ['coolDownMs', 1],
      ['timeoutMs', 1],
    ] as const) {
      const v = opts[name];
      if (!Number.isInteger(v) || v < min)
        throw new TypeError(`withHotKeys: breaker.${name} must be an integer >= ${min}, got ${String(v)}`);
    }
    this.#client = client;
    this.#opts = opts;
    this.#onChange = onChange;
    this.#isCluster = (client as Partial<Cluster>).isCluster === true;
  }

  /** The breaker of the node serving `key` (standalone: the one node); undefined when unknown yet. */
  nodeFor(key: unknown): NodeBreaker | undefined {
    let name: string;
    if (!this.#isCluster) {
      if (this.#single !== undefined) return this.#single;
      const o = (this.#client as Redis).options;
      name = `${o.host ?? 'localhost'}:${o.port ?? 6379}`;
    } else {
      if (typeof key !== 'string' && !(key instanceof Uint8Array)) return undefined;
      const owner = (this.#client as Cluster).slots[keySlot(key)]?.[0];
      if (owner === undefined) return undefined;
      name = owner;
    }
    let node = this.#nodes.get(name);
    if (node === undefined) {
      // bounded by the cluster's masters (and the nodes slots pointed at over time)
      node = new NodeBreaker(name);
      this.#nodes.set(name, node);
      if (!this.#isCluster) this.#single = node;
    }
    return node;
  }

  /** The node of a command (its first key) */
  nodeOf(command: Watched): NodeBreaker | undefined {
    if (!this.#isCluster) return this.nodeFor(undefined);
    const keys = command.getKeys();
    return keys.length === 0 ? undefined : this.nodeFor(keys[0]);
  }

  /** Whether commands for `node` must fail fast now. */
  isOpen(node: NodeBreaker): boolean {
    return node.state !== 'closed';
  }

  /** The error a command or load gets while `node`'s breaker is open (counted). */
  reject(node: NodeBreaker): HotKeyError {
    node.rejected++;
    return new HotKeyError(
      ErrorCode.BreakerOpen,
      `Redis node ${node.node} is failing: its circuit breaker is ${node.state}; retry after the cool-down`,
    );
  }

  /** Counts `command`'s outcome against `node`. */
  watch(node: NodeBreaker, command: Watched): void {
    if (WAITS.has(command.name.toLowerCase())) return;
    node.inflight.set(command, performance.now());
    if (this.#inflight++ === 0) this.#arm();
    command.promise.then(
      () => this.#settled(node, command, true),
      (err: unknown) => this.#settled(node, command, isReply(err)),
    );
  }

  stats(): BreakerStats[] {
    return [...this.#nodes.values()].map((n) => ({
      node: n.node,
      state: n.state,
      failures: n.failures,
      opened: n.opened,
      rejected: n.rejected,
    }));
  }

  #settled(node: NodeBreaker, command: object, ok: boolean): void {
    if (node.inflight.delete(command)) this.#left();
    if (this.#timedOut.has(command)) return;
    if (ok) {
      if (node.state === 'closed') node.consecutive = 0;
    } else this.#failure(node);
  }

  #failure(node: NodeBreaker): void {
    node.failures++;
    if (node.state !== 'closed') return;
    if (++node.consecutive >= this.#opts.failures) this.#open(node);
  }

  #open(node: NodeBreaker): void {
    node.state = 'open';
    node.opened++;
    this.#onChange(node.node, 'open');
    setTimeout(() => this.#probe(node), this.#opts.coolDownMs)?.unref?.();
  }

  #probe(node: NodeBreaker): void {
    if (isClosing(this.#client)) return; // the client is going: no probe is written behind its QUIT
    node.state = 'half-open';
    this.#onChange(node.node, 'half-open');
    let settled = false;
    const verdict = (ok: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (!ok) return this.#open(node);
      node.state = 'closed';
      node.consecutive = 0;
      this.#onChange(node.node, 'closed');
    };
    const timer = setTimeout(() => verdict(false), this.#opts.timeoutMs);
    timer?.unref?.();
    this.#ping(node).then(
      () => verdict(true),
      (err: unknown) => verdict(isReply(err)),
    );
  }

  /** PING to the node itself, past the wrapper's hook */
  #ping(node: NodeBreaker): Promise<unknown> {
    if (!this.#isCluster) return unguarded(() => (this.#client as Redis).ping());
    const conn = (this.#client as Cluster)
      .nodes('master')
      .find((n) => `${n.options.host}:${n.options.port}` === node.node);
    return conn === undefined ? Promise.reject(new Error('node left the cluster')) : conn.ping();
  }

  #arm(): void {
    const every = Math.max(10, Math.floor(this.#opts.timeoutMs / 4));
    this.#sweeper = setTimeout(() => {
      this.#sweeper = undefined;
      this.#sweep();
      if (this.#inflight > 0 && this.#sweeper === undefined) this.#arm();
    }, every);
    this.#sweeper?.unref?.(); // a stubbed or fake clock may hand back no Timeout object
  }

  /** A command left the in-flight set: the last one stops the sweeper. */
  #left(): void {
    if (--this.#inflight > 0 || this.#sweeper === undefined) return;
    clearTimeout(this.#sweeper);
    this.#sweeper = undefined;
  }

  /**
   * Commands unanswered past timeoutMs count as failures, once each (oldest first: stop at the
   * first young one). Judged in the check phase (setImmediate), after the event loop's poll phase
   * has read what the sockets hold: a process that was stalled (a busy CPU, a long GC) runs its
   * timers first on waking, when replies that arrived meanwhile are still unread — counting those
   * would open the breaker on a node that answered in time, and fail reads a plain client serves.
   */
  #sweep(): void {
    const limit = performance.now() - this.#opts.timeoutMs;
    const overdue: [NodeBreaker, object][] = [];
    for (const node of this.#nodes.values()) {
      for (const [command, sentAt] of node.inflight) {
        if (sentAt > limit) break;
        overdue.push([node, command]);
      }
    }
    if (overdue.length === 0) return;
    setImmediate(() => {
      for (const [node, command] of overdue) {
        if (!node.inflight.delete(command)) continue; // answered in the poll phase: not a timeout
        this.#left();
        this.#timedOut.add(command);
        this.#failure(node);
      }
    });
  }
}

/** A Redis error reply: the node is alive and answered. */
function isReply(err: unknown): boolean {
  return err instanceof Error && err.name === 'ReplyError';
}

/** Every open wrapped client's breakers, per HotKeyClient: one metrics source each client reads them all through. */
const breakersOf = new WeakMap<HotKeyClient, Set<Breakers>>();

/**
 * Exports `breakers`' per-node state through the client's metrics hook (`metricsText`) until the
 * wrapped Redis client ends: `ioredis_breaker_open` (1 while open or half-open) and the failures,
 * openings and rejections as counters, one `node` label each (nodes are the deployment's masters: a
 * bounded set). Duplicates of a client (their own breakers, same nodes) are summed per node.
 */
export function exportBreakerMetrics(hk: HotKeyClient, client: Client, breakers: Breakers): void {
  let all = breakersOf.get(hk);
  if (all === undefined) {
    const set = new Set<Breakers>();
    all = set;
    breakersOf.set(hk, set);
    registerMetricsSource(hk, 'ioredis-breaker', () => breakerSamples(set));
  }
  all.add(breakers);
  client.once('end', () => all.delete(breakers));
}

function breakerSamples(all: Iterable<Breakers>): MetricSample[] {
  const byNode = new Map<string, { open: boolean; failures: number; opened: number; rejected: number }>();
  for (const breakers of all) {
    for (const s of breakers.stats()) {
      const sum = byNode.get(s.node) ?? { open: false, failures: 0, opened: 0, rejected: 0 };
      sum.open ||= s.state !== 'closed';
      sum.failures += s.failures;
      sum.opened += s.opened;
      sum.rejected += s.rejected;
      byNode.set(s.node, sum);
    }
  }
  const out: MetricSample[] = [];
  for (const [node, s] of byNode) {
    const labels = { node };
    out.push(
      {
        name: 'ioredis_breaker_open',
        type: 'gauge',
        help: "1 while the node's circuit breaker is open or half-open.",
        value: s.open ? 1 : 0,
        labels,
      },
      {
        name: 'ioredis_breaker_failures',
        type: 'counter',
        help: 'Failed or unanswered commands counted by the breaker.',
        value: s.failures,
        labels,
      },
      {
        name: 'ioredis_breaker_opened',
        type: 'counter',
        help: 'Times the breaker opened.',
        value: s.opened,
        labels,
      },
      {
        name: 'ioredis_breaker_rejected',
        type: 'counter',
        help: 'Commands and loads failed fast (HK_ERR_BREAKER_OPEN).',
        value: s.rejected,
        labels,
      },
    );
  }
  return out;
}
