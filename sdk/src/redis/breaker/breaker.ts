/**
 * A circuit breaker per Redis node (the standalone server, or each Cluster master), so that a
 * dead or frozen node costs callers nothing once it is known to be down (the circuit-breaker
 * pattern of Nygard's "Release It!"; defaults: 5 failures → open for 3 s), for every adapter.
 * After `failures` consecutive failures — a connection error, or a command still unanswered after
 * `timeoutMs` — the node's breaker opens: the adapter rejects commands for it at once with
 * HK_ERR_BREAKER_OPEN instead of queueing, and a hot key's load rejects the same way, which lets
 * the client serve its last value (stale-if-error). After `coolDownMs` the breaker goes half-open
 * and sends one PING of its own (user commands still fail fast meanwhile): an answer within
 * `timeoutMs` closes it, anything else opens it for another cool-down.
 *
 * The core knows nodes by name and commands by identity; an adapter reports what its client
 * does (`sent`, `settled`, `failed`, or `watch` for a command with a promise), says which errors
 * are the node's answer, and how to PING a node past its hook (`BreakerHost`).
 *
 * A Redis error reply (WRONGTYPE, NOSCRIPT …) is the node answering: a success. A command that
 * timed out is counted once, when it passes `timeoutMs`, and not again when it settles.
 * Unanswered commands are found by a timer that looks at each node's oldest command in flight
 * (every timeoutMs / 4), not by a timer per command. That timer exists only while a command is in
 * flight: an idle or closed client keeps no timer of ours (a test counting the process's timers,
 * or waiting for the event loop to empty, sees what it would see on a plain client), and it is a
 * one-shot timeout re-armed by each sweep, never an interval. A command is stamped with the
 * sweeper's tick count, not a clock reading (every command pays for its stamp): it is overdue once
 * enough sweeps went by that it has been in flight timeoutMs at least, so it times out between
 * timeoutMs and timeoutMs plus one sweep interval after it was sent, as a timestamp checked by
 * the same sweeps would.
 *
 * A stalled event loop is not a slow Redis: a command's age is counted in sweeps, which run only
 * while the process does (a timer that fires late is one sweep, however late), and the verdict
 * waits for the poll phase to read what the sockets hold. The ioredis adapter times the reply
 * itself, not a write's promise, which settles only after the hub's acknowledgement.
 */
import { ErrorCode, HotKeyError } from '../../errors.ts';

export interface BreakerOptions {
  /** consecutive failures or timeouts that open a node's breaker @default 5 */
  failures?: number;
  /** how long it stays open before a probe @default 3000 */
  coolDownMs?: number;
  /** a command unanswered this long counts as a failure; also the probe's deadline @default 1000 */
  timeoutMs?: number;
}

export const BREAKER_DEFAULTS: Required<BreakerOptions> = { failures: 5, coolDownMs: 3000, timeoutMs: 1000 };

/**
 * The `breaker` option of `withHotKeys` (either adapter) as the breaker's settings: `true` or
 * absent → the defaults, `false` → none (undefined). TypeError, naming the field, for anything else.
 */
export function breakerSettings(given: unknown): Required<BreakerOptions> | undefined {
  if (given === false) return undefined;
  if (given === undefined || given === true) return { ...BREAKER_DEFAULTS };
  if (typeof given !== 'object' || given === null || Array.isArray(given))
    throw new TypeError(
      `withHotKeys: breaker must be true, false or { failures, coolDownMs, timeoutMs }, got ${String(given)}`,
    );
  const opts = { ...BREAKER_DEFAULTS };
  for (const name of ['failures', 'coolDownMs', 'timeoutMs'] as const) {
    const v = (given as BreakerOptions)[name];
    if (v === undefined) continue;
    if (!Number.isInteger(v) || v < 1)
      throw new TypeError(`withHotKeys: breaker.${name} must be an integer >= 1, got ${String(v)}`);
    opts[name] = v;
  }
  return opts;
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

/** Whether a command (lower-case name) waits by design and is not timed by the breaker. */
export function waitsByDesign(name: string): boolean {
  return WAITS.has(name);
}

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

/** What an adapter lends the breaker. */
export interface BreakerHost {
  /** a PING to `node` itself, past the adapter's hook and past the breaker */
  ping(node: string): Promise<unknown>;
  /** the client that would carry `node`'s probe is closing: no probe is written behind its close */
  closing(node: string): boolean;
  /** the error is the node's answer (a Redis error reply), not a failure to reach it */
  isAnswer(error: unknown): boolean;
}

/**
 * A watched command's number, stamped on it: its key in each node's `inflight`. A symbol property,
 * as command.ts `dispatched`: one map transition shared by every command.
 */
const WATCH_ID: unique symbol = Symbol('hotkey.breakerWatch');
type Stamped = { [WATCH_ID]?: number };
/** numbers wrap here: they stay small integers, and one still in flight is never met again */
const MAX_WATCH_ID = 0x3fffffff;

export class NodeBreaker {
  readonly node: string;
  state: BreakerState = 'closed';
  consecutive = 0;
  failures = 0;
  opened = 0;
  rejected = 0;
  /** open, and its probe was put off because its client was closing: the next command for it sends one */
  probeDue = false;
  /**
   * commands in flight by number (WATCH_ID), oldest first, with the sweeper's tick count when
   * they were sent. By number, not by the command: a table of the commands themselves, long
   * lived, kept answered commands (and all they point to) alive through young-generation
   * collections into the old generation, a GC price per command the plain client never pays.
   */
  readonly inflight = new Map<number, number>();

  constructor(node: string) {
    this.node = node;
  }
}

export class Breakers {
  readonly #opts: Required<BreakerOptions>;
  readonly #host: BreakerHost;
  readonly #onChange: (node: string, state: BreakerState) => void;
  readonly #nodes = new Map<string, NodeBreaker>();
  #sweeper: ReturnType<typeof setTimeout> | undefined;
  /** ms between sweeps */
  readonly #every: number;
  /** sweeps run so far: the clock commands are stamped with */
  #tick = 0;
  /**
   * sweeps after which a command is overdue: it may be sent just before a sweep, so one more than
   * the sweeps that make up timeoutMs
   */
  readonly #overdueTicks: number;
  /** commands in flight on every node (the sweeper runs while this is above 0) */
  #inflight = 0;
  /** the next command number (WATCH_ID) */
  #nextId = 0;

  /** @param options settled by `breakerSettings` */
  constructor(
    options: Required<BreakerOptions>,
    host: BreakerHost,
    onChange: (node: string, state: BreakerState) => void,
  ) {
    this.#opts = options;
    this.#host = host;
    this.#onChange = onChange;
    this.#every = Math.max(10, Math.floor(options.timeoutMs / 4));
    this.#overdueTicks = Math.ceil(options.timeoutMs / this.#every) + 1;
  }

  /** The breaker of the node named `name`, made on first sight (bounded by the deployment's nodes). */
  node(name: string): NodeBreaker {
    let node = this.#nodes.get(name);
    if (node === undefined) {
      node = new NodeBreaker(name);
      this.#nodes.set(name, node);
    }
    return node;
  }

  /** The breaker of `name` if a command for it was seen. */
  known(name: string): NodeBreaker | undefined {
    return this.#nodes.get(name);
  }

  /** Whether commands for `node` must fail fast now. */
  isOpen(node: NodeBreaker): boolean {
    return node.state !== 'closed';
  }

  /** The error a command or load gets while `node`'s breaker is open (counted). */
  reject(node: NodeBreaker): HotKeyError {
    node.rejected++;
    if (node.probeDue) {
      node.probeDue = false;
      this.#probe(node);
    }
    return new HotKeyError(
      ErrorCode.BreakerOpen,
      `Redis node ${node.node} is failing: its circuit breaker is ${node.state}; retry after the cool-down`,
    );
  }

  /**
   * `command` (`name` in lower case) was sent to `node`; the adapter reports its outcome with
   * `settled` or `failed`. Returns false for a command that waits by design (not watched).
   */
  sent(node: NodeBreaker, command: object, name: string): boolean {
    if (WAITS.has(name)) return false;
    // one number per command, on every node it is sent to (a node's entry is the pair)
    const id = ((command as Stamped)[WATCH_ID] ??= this.#newId());
    // watched again (ioredis replays its offline queue through the hook): one entry, counted once,
    // or the in-flight count would never return to 0 and the sweeper would hold the client forever
    if (!node.inflight.has(id)) this.#add(node, id);
    return true;
  }

  /** Whether `command` is in flight on `node` (watched, not answered or timed out yet). */
  watching(node: NodeBreaker, command: object): boolean {
    const id = (command as Stamped)[WATCH_ID];
    return id !== undefined && node.inflight.has(id);
  }

  #newId(): number {
    const id = this.#nextId;
    this.#nextId = id === MAX_WATCH_ID ? 0 : id + 1;
    return id;
  }

  #add(node: NodeBreaker, id: number): void {
    node.inflight.set(id, this.#tick);
    if (this.#inflight++ === 0) this.#arm();
  }

  /** `command` moved on without a verdict yet (e.g. a pool lent it a client: watched there from now on). */
  passed(node: NodeBreaker, command: object): void {
    this.#done(node, (command as Stamped)[WATCH_ID]);
  }

  /** `node` answered `command` (a reply, or a Redis error reply). */
  settled(node: NodeBreaker, command: object): void {
    this.#settledId(node, (command as Stamped)[WATCH_ID]);
  }

  #settledId(node: NodeBreaker, id: number | undefined): void {
    if (this.#done(node, id) && node.state === 'closed') node.consecutive = 0;
  }

  /** `command` failed without an answer from `node` (a connection error). */
  failed(node: NodeBreaker, command: object): void {
    this.#failedId(node, (command as Stamped)[WATCH_ID]);
  }

  #failedId(node: NodeBreaker, id: number | undefined): void {
    if (this.#done(node, id)) this.#failure(node);
  }

  /** `sent`, then `settled` or `failed` as `promise` settles (its error judged by the host's `isAnswer`). */
  watch(node: NodeBreaker, name: string, promise: Promise<unknown>): void {
    // a number of its own (the adapter's command object may not be ours to stamp, nor its promise)
    if (WAITS.has(name)) return;
    const id = this.#newId();
    this.#add(node, id);
    promise.then(
      () => this.#settledId(node, id),
      (err: unknown) => (this.#host.isAnswer(err) ? this.#settledId(node, id) : this.#failedId(node, id)),
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

  /** The command left the in-flight set; false when it was not in it (timed out already, or never watched). */
  #done(node: NodeBreaker, id: number | undefined): boolean {
    if (id === undefined || !node.inflight.delete(id)) return false;
    this.#left();
    return true;
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
    if (this.#host.closing(node.node)) {
      // no probe behind a close: the node stays open until a command for it comes
      node.probeDue = true;
      return;
    }
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
    // judged after the poll phase, as the sweep is: a PONG that arrived while the process was stalled is an answer
    const timer = setTimeout(() => setImmediate(() => verdict(false)), this.#opts.timeoutMs);
    timer?.unref?.();
    let ping: Promise<unknown>;
    try {
      ping = this.#host.ping(node.node);
    } catch (err) {
      ping = Promise.reject(err);
    }
    ping.then(
      () => verdict(true),
      (err: unknown) => verdict(this.#host.isAnswer(err)),
    );
  }

  #arm(): void {
    this.#sweeper = setTimeout(() => {
      this.#sweeper = undefined;
      // one tick however late the timer fired: a process that did not run (a busy CPU, a long GC,
      // a synchronous stretch) may have left Redis's replies unread in the sockets meanwhile
      this.#tick++;
      this.#sweep();
      if (this.#inflight > 0 && this.#sweeper === undefined) this.#arm();
    }, this.#every);
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
    const limit = this.#tick - this.#overdueTicks;
    const overdue: [NodeBreaker, number][] = [];
    for (const node of this.#nodes.values()) {
      for (const [id, sentAt] of node.inflight) {
        if (sentAt > limit) break;
        overdue.push([node, id]);
      }
    }
    if (overdue.length === 0) return;
    setImmediate(() => {
      for (const [node, id] of overdue) {
        if (!node.inflight.delete(id)) continue; // answered in the poll phase: not a timeout
        this.#left(); // its late settlement finds it gone: counted once
        this.#failure(node);
      }
    });
  }
}
