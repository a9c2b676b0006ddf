/**
 * Fair intake: the work every SDK connection's frames cause, scheduled so that no connection can
 * delay another's by more than a small, fixed amount however much it sends.
 *
 * Design: deficit round robin over CPU time (Shreedhar & Varghese, "Efficient fair queueing using
 * deficit round robin", 1995) with the sparse-flow priority of FQ-CoDel (RFC 8290 §4.1): each
 * connection is a flow with its own FIFO of work items (a frame, or what is left of a long report);
 * a flow that becomes active joins the *new* list and is served before the *old* list, so an SDK
 * that sends one small report per flush is served at the next scheduling point instead of behind
 * megabytes queued by others. A visit lets a flow run items until it has used `quantumMs` of CPU
 * (measured, so a decode, an ingest and an invalidation cost what they really cost); then it goes
 * to the back of the old list. A drain runs at most `turnMs` and then yields to the event loop
 * (setImmediate), so timers, /healthz and new frames get in between batches.
 *
 * While nothing is queued a frame of up to 64 KiB runs inline, as if there were no scheduler, until
 * this event loop turn has spent `turnMs`; after that frames queue. Larger frames always queue:
 * decoding one can take tens of ms, and another connection's small frame read in the same poll
 * phase must not wait for it. The common case costs two clock reads: the inline spend is reset
 * after the turn only once it reaches a quarter of `turnMs`; below that it carries over to the next
 * turns, so a turn may run a little less inline work than `turnMs`, never more, and a sparse
 * stream of small frames (a write now and then) schedules nothing after each.
 *
 * Memory and receive cost: a flow holding more than `maxQueuedBytes`, or more than a small frame
 * while all flows together hold more than `maxTotalQueuedBytes`, is paused (its socket stops being
 * read, so TCP pushes back on the sender) until its queue is empty. Receiving is not free either
 * (ws unmasks and copies every byte, and a resumed socket delivers all the kernel buffered for it
 * at once), so a connection is not read much faster than it is served, and paused flows are
 * resumed one per event loop turn, only while the intake holds under half of
 * `maxTotalQueuedBytes`: 48 resumed floods must not land in one poll phase.
 *
 * Items are opaque here: `IntakeFlow.run` gets one and returns what is left of it, if anything.
 */
import { DEFAULT_TUNABLES } from '../tunables.ts';

/** a flow holding no more than this is never paused for the others' backlog (a legit SDK's reports) */
const SMALL_QUEUE_BYTES = 64 * 1024;

export interface IntakeFlow {
  /** Does (part of) one item's work; returns the rest when it stopped early, else undefined. */
  run(item: unknown): unknown;
  /** stop reading from the connection (backpressure); optional */
  pause(): void;
  resume(): void;
  /** `run` threw: the connection is at fault (it closes itself) */
  fault(err: unknown): void;
}

export interface IntakeOptions {
  /** ms of work per event loop turn before yielding @default 4 */
  turnMs?: number;
  /** ms of work a flow may do per visit @default 0.5 */
  quantumMs?: number;
  /** bytes queued per flow above which its socket is paused @default 1048576 (1 MiB) */
  maxQueuedBytes?: number;
  /** bytes queued by all flows above which a flow holding more than 64 KiB is paused @default 4194304 (4 MiB) */
  maxTotalQueuedBytes?: number;
  /** monotonic ms @default performance.now */
  monoNow?: () => number;
  /** runs `fn` after pending I/O @default setImmediate */
  defer?: (fn: () => void) => void;
}

export interface IntakeStats {
  /** items that had to wait in a queue */
  queued: number;
  /** times a flow was paused for holding more than maxQueuedBytes */
  paused: number;
  /** drains that stopped at turnMs with work left */
  yields: number;
  /** bytes queued now, all flows */
  queuedBytes: number;
}

/** One connection's queue. Create with `Intake.flow`. */
export class FlowQueue {
  readonly owner: IntakeFlow;
  readonly items: unknown[] = [];
  readonly sizes: number[] = [];
  head = 0;
  bytes = 0;
  deficit = 0;
  active = false;
  paused = false;
  closed = false;

  constructor(owner: IntakeFlow) {
    this.owner = owner;
  }

  get length(): number {
    return this.items.length - this.head;
  }
}

export class Intake {
  readonly #turnMs: number;
  readonly #quantumMs: number;
  readonly #maxQueuedBytes: number;
  readonly #maxTotalQueuedBytes: number;
  readonly #monoNow: () => number;
  readonly #defer: (fn: () => void) => void;
  #new: FlowQueue[] = [];
  /** paused flows whose queue emptied, resumed one per turn */
  #toResume: FlowQueue[] = [];
  #old: FlowQueue[] = [];
  #drainScheduled = false;
  /** work done inline in the current turn, and whether its reset is scheduled */
  #inlineSpent = 0;
  #resetScheduled = false;
  readonly #stats = { queued: 0, paused: 0, yields: 0 };
  #queuedBytes = 0;

  constructor(options: IntakeOptions = {}) {
    this.#turnMs = options.turnMs ?? DEFAULT_TUNABLES.intakeTurnMs;
    this.#quantumMs = options.quantumMs ?? DEFAULT_TUNABLES.intakeQuantumMs;
    this.#maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_TUNABLES.maxQueuedBytesPerConnection;
    this.#maxTotalQueuedBytes = options.maxTotalQueuedBytes ?? DEFAULT_TUNABLES.maxQueuedBytes;
    this.#monoNow = options.monoNow ?? (() => performance.now());
    this.#defer = options.defer ?? ((fn) => setImmediate(fn));
  }

  get stats(): IntakeStats {
    return { ...this.#stats, queuedBytes: this.#queuedBytes };
  }

  /** flows with queued work */
  get backlog(): number {
    return this.#new.length + this.#old.length;
  }

  flow(owner: IntakeFlow): FlowQueue {
    return new FlowQueue(owner);
  }

  /** An item of `bytes` bytes arrived on `flow`: runs now, or queues behind the flow's own. */
  submit(flow: FlowQueue, item: unknown, bytes: number): void {
    if (flow.closed) return;
    if (!flow.active && bytes <= SMALL_QUEUE_BYTES && this.backlog === 0 && this.#inlineSpent < this.#turnMs) {
      const t0 = this.#monoNow();
      let rest: unknown;
      try {
        rest = flow.owner.run(item);
      } catch (err) {
        flow.owner.fault(err);
      }
      this.#inlineSpent += this.#monoNow() - t0;
      if (!this.#resetScheduled && this.#inlineSpent >= this.#turnMs / 4) {
        this.#resetScheduled = true;
        this.#defer(() => {
          this.#resetScheduled = false;
          this.#inlineSpent = 0;
        });
      }
      if (rest === undefined || flow.closed) return;
      item = rest;
    }
    this.#enqueue(flow, item, bytes);
  }

  /** The connection is gone: its queued work is dropped. */
  close(flow: FlowQueue): void {
    if (flow.closed) return;
    flow.closed = true;
    this.#queuedBytes -= flow.bytes;
    flow.items.length = 0;
    flow.sizes.length = 0;
    flow.head = 0;
    flow.bytes = 0;
    // left in the lists: skipped (and dropped) when its turn comes
  }

  #enqueue(flow: FlowQueue, item: unknown, bytes: number): void {
    flow.items.push(item);
    flow.sizes.push(bytes);
    flow.bytes += bytes;
    this.#queuedBytes += bytes;
    this.#stats.queued++;
    if (!flow.active) {
      flow.active = true;
      flow.deficit = this.#quantumMs;
      this.#new.push(flow);
    }
    if (
      !flow.paused &&
      (flow.bytes > this.#maxQueuedBytes ||
        (this.#queuedBytes > this.#maxTotalQueuedBytes && flow.bytes > SMALL_QUEUE_BYTES))
    ) {
      flow.paused = true;
      this.#stats.paused++;
      flow.owner.pause();
    }
    if (!this.#drainScheduled) {
      this.#drainScheduled = true;
      this.#defer(() => this.#drain());
    }
  }

  #drain(): void {
    this.#drainScheduled = false;
    const start = this.#monoNow();
    let now = start;
    for (;;) {
      const fromNew = this.#new.length > 0;
      const flow = fromNew ? this.#new.shift() : this.#old.shift();
      if (flow === undefined) break;
      if (flow.closed) {
        flow.active = false;
        continue;
      }
      if (flow.deficit <= 0) {
        flow.deficit += this.#quantumMs;
        this.#old.push(flow);
        continue;
      }
      while (flow.deficit > 0 && flow.length > 0 && now - start < this.#turnMs) {
        const item = flow.items[flow.head];
        let rest: unknown;
        try {
          rest = flow.owner.run(item);
        } catch (err) {
          rest = undefined;
          flow.owner.fault(err);
        }
        const t = this.#monoNow();
        flow.deficit -= t - now;
        now = t;
        if (flow.closed) break;
        if (rest === undefined) this.#shift(flow);
        else flow.items[flow.head] = rest;
      }
      if (flow.closed) {
        flow.active = false;
        continue;
      }
      if (flow.length === 0) {
        flow.active = false;
        flow.deficit = 0;
        this.#resumeIfDrained(flow);
      } else if (flow.deficit > 0) {
        // the turn ended mid-visit: it continues first next turn
        (fromNew ? this.#new : this.#old).unshift(flow);
      } else {
        flow.deficit += this.#quantumMs;
        this.#old.push(flow);
      }
      if (now - start >= this.#turnMs) break;
    }
    this.#resumeOne();
    if (this.backlog > 0 || this.#toResume.length > 0) {
      if (this.backlog > 0) this.#stats.yields++;
      this.#drainScheduled = true;
      this.#defer(() => this.#drain());
    }
  }

  #resumeOne(): void {
    if (this.#queuedBytes >= this.#maxTotalQueuedBytes / 2) return;
    for (;;) {
      const flow = this.#toResume.shift();
      if (flow === undefined) return;
      if (flow.closed || !flow.paused) continue;
      flow.paused = false;
      flow.owner.resume();
      return;
    }
  }

  #shift(flow: FlowQueue): void {
    const size = flow.sizes[flow.head]!;
    flow.items[flow.head] = undefined;
    flow.head++;
    flow.bytes -= size;
    this.#queuedBytes -= size;
    if (flow.head === flow.items.length) {
      flow.items.length = 0;
      flow.sizes.length = 0;
      flow.head = 0;
    } else if (flow.head > 1024 && flow.head * 2 > flow.items.length) {
      flow.items.splice(0, flow.head);
      flow.sizes.splice(0, flow.head);
      flow.head = 0;
    }
    this.#resumeIfDrained(flow);
  }

  #resumeIfDrained(flow: FlowQueue): void {
    if (flow.paused && flow.bytes === 0) this.#toResume.push(flow);
  }
}
