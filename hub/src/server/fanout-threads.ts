/**
 * Fan-out over threads (part of the ws adapter): a big broadcast is written to its sockets by the
 * event loop and by helper threads at once.
 *
 * Why: every socket write costs JavaScript and kernel TCP time, so one thread writing 10,000
 * sockets can take longer than the 100 ms a promotion may take to reach every SDK
 * (`pnpm bench --only fanout-write`). The kernel side runs in the writing thread, so more writing threads divide
 * it too.
 *
 * How: a helper thread cannot touch a net.Socket, but it can write(2) the socket's file
 * descriptor. `begin` takes the sockets a raw write may go to — plain TCP (no TLS), open, with
 * nothing queued, corked or pending in ws's sender, so these bytes are the next on the wire either
 * way — and gives each helper a range of their descriptors plus the frame, in shared memory; the
 * caller writes the rest itself meanwhile. `end` waits for the helpers (the event loop is blocked
 * until then, so no other write can slip between, and no descriptor can be closed and reused), then
 * writes through the socket whatever a helper could not: the tail of a partial write, or the whole
 * frame where write(2) failed (EAGAIN: the kernel buffer is full, Node queues it as always; a dead
 * connection errors through Node's own path). Every socket thus gets exactly the bytes, in order,
 * that `socket.write` would have given it.
 *
 * The helpers start on the first big fan-out (a small hub never runs them; that fan-out and any
 * until they are up are written by the event loop alone), do not keep the process alive, and stop
 * with `close`.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { BulkWriter, Peer, BroadcastFrame } from '../core/peer.ts';
import { binaryFrame } from './hub-socket.ts';

/** control words (Int32Array over shared memory) */
const GENERATION = 0;
const PENDING = 1;
const FRAME_BYTES = 2;
const STOP = 3;
/** helper h's range of the descriptor list: [RANGES + 2h, RANGES + 2h + 1) */
const RANGES = 4;
/** a helper that has not finished its range in this long is broken: better a stalled broadcast logged than a hang */
const WAIT_LIMIT_MS = 10_000;
/** frames above this go through the event loop only (broadcasts are Promote-sized; Config frames can be larger) */
const MAX_FRAME_BYTES = 64 * 1024;
/** sockets the shared descriptor list holds at first (256 KiB each list); more restart the helpers over bigger ones */
const INITIAL_CAPACITY = 65_536;

/** The helper thread: waits for a generation, writes its range, counts down, and again. */
const HELPER_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const control = new Int32Array(workerData.control);
const fds = new Int32Array(workerData.fds);
const written = new Int32Array(workerData.written);
const frame = new Uint8Array(workerData.frame);
const at = ${RANGES} + 2 * workerData.index;
let generation = 0;
parentPort.postMessage('ready');
for (;;) {
  Atomics.wait(control, ${GENERATION}, generation);
  generation = Atomics.load(control, ${GENERATION});
  if (Atomics.load(control, ${STOP}) !== 0) break;
  const bytes = frame.subarray(0, control[${FRAME_BYTES}]);
  for (let k = control[at], to = control[at + 1]; k < to; k++) {
    try {
      written[k] = writeSync(fds[k], bytes);
    } catch {
      written[k] = -1; // nothing was written (EAGAIN, EPIPE, ...): the event loop writes it all
    }
  }
  if (Atomics.sub(control, ${PENDING}, 1) === 1) Atomics.notify(control, ${PENDING});
}
`;

/** what `begin` needs of a peer: HubSocket's `rawSocket` */
interface RawWritable {
  rawSocket?(): Duplex | undefined;
}

export interface FanoutThreadsOptions {
  /** helper threads, at most; never more than the CPU count minus one (0 = none) */
  threads: number;
  /** fan-outs to fewer sockets stay on the event loop */
  minSockets: number;
  /** a helper failed or stalled: the pool is shut and fan-outs stay on the event loop */
  onFailure?: (err: Error) => void;
}

export class FanoutThreads implements BulkWriter {
  readonly minPeers: number;
  readonly threads: number;
  #helpers: Worker[] = [];
  /** helpers that have started and wait for work: until all have, the event loop writes alone */
  #started = 0;
  #control = sharedInts(RANGES);
  #fds = sharedInts(0);
  #written = sharedInts(0);
  readonly #frame = new Uint8Array(new SharedArrayBuffer(MAX_FRAME_BYTES));
  /** the raw-writable sockets of the open fan-out, index-aligned with #fds; helpers own those from #handedFrom */
  #handed: Duplex[] = [];
  #handedFrom = 0;
  /** the open fan-out's frame (undefined: none open) */
  #wire: Uint8Array | undefined;
  #broken = false;
  readonly #onFailure: ((err: Error) => void) | undefined;
  /** sockets a helper wrote a whole frame to, and those the event loop finished after a helper (EAGAIN, partial) */
  readonly stats = { byHelpers: 0, finishedByLoop: 0 };

  constructor(options: FanoutThreadsOptions) {
    this.threads = Math.max(0, Math.min(Math.floor(options.threads), availableParallelism() - 1));
    this.minPeers = Math.max(1, options.minSockets);
    this.#onFailure = options.onFailure;
  }

  /**
   * Hands the raw-writable part of `peers` to the helpers, who start writing `frame` at once;
   * returns the peers left for the caller to write now. `end` must follow, even if that throws.
   */
  begin(frame: BroadcastFrame, peers: readonly Peer[]): readonly Peer[] {
    // a broadcast started while one is open (from a callback of the caller's writes) stays on the event loop
    if (this.threads === 0 || this.#broken || peers.length < this.minPeers || this.#wire !== undefined) return peers;
    const wire = (frame.wire ??= binaryFrame(frame.payload));
    if (wire.byteLength > MAX_FRAME_BYTES) return peers;
    if (!this.#ready(peers.length)) return peers;
    const rest: Peer[] = [];
    const rawPeers: Peer[] = [];
    const rawFds: number[] = [];
    const sockets = this.#handed;
    for (const peer of peers) {
      const socket = (peer as RawWritable).rawSocket?.();
      const fd = socket === undefined ? -1 : fdOf(socket);
      if (fd >= 0) {
        rawPeers.push(peer);
        rawFds.push(fd);
        sockets.push(socket!);
      } else rest.push(peer);
    }
    // the event loop writes an equal range of the raw-writable sockets, besides the others
    const perThread = Math.floor(sockets.length / (this.threads + 1));
    if (perThread === 0) {
      sockets.length = 0;
      return peers;
    }
    const mine = sockets.length - perThread * this.threads;
    for (let k = 0; k < mine; k++) rest.push(rawPeers[k]!);
    const control = this.#control;
    const fds = this.#fds;
    for (let k = mine; k < sockets.length; k++) fds[k] = rawFds[k]!;
    for (let h = 0; h < this.threads; h++) {
      control[RANGES + 2 * h] = mine + h * perThread;
      control[RANGES + 2 * h + 1] = mine + (h + 1) * perThread;
    }
    this.#frame.set(wire);
    control[FRAME_BYTES] = wire.byteLength;
    this.#wire = wire;
    this.#handedFrom = mine;
    Atomics.store(control, PENDING, this.threads);
    Atomics.add(control, GENERATION, 1);
    Atomics.notify(control, GENERATION);
    return rest;
  }

  /** Waits for the helpers, then finishes through each socket what a helper's write(2) did not. */
  end(): void {
    const wire = this.#wire;
    if (wire === undefined) return;
    this.#wire = undefined;
    const control = this.#control;
    const deadline = performance.now() + WAIT_LIMIT_MS;
    let stalled = false;
    for (let pending = Atomics.load(control, PENDING); pending > 0; pending = Atomics.load(control, PENDING)) {
      const left = deadline - performance.now();
      if (left <= 0 || Atomics.wait(control, PENDING, pending, left) === 'timed-out') {
        stalled = true;
        this.#fail(new Error(`fan-out helper threads did not finish within ${WAIT_LIMIT_MS} ms`));
        break;
      }
    }
    const sockets = this.#handed;
    const written = this.#written;
    for (let k = this.#handedFrom; k < sockets.length; k++) {
      const n = written[k]!;
      written[k] = 0;
      if (n === wire.byteLength) {
        this.stats.byHelpers++;
        continue;
      }
      this.stats.finishedByLoop++;
      // a stalled helper may still write it: cut the connection rather than risk the frame twice
      // (the SDK reconnects and resynchronises from a Snapshot)
      if (stalled && n === 0) sockets[k]!.destroy();
      // EAGAIN or an error (n < 0): nothing of it went out; a partial write: the rest
      else sockets[k]!.write(n > 0 ? wire.subarray(n) : wire);
    }
    sockets.length = 0;
  }

  /** Starts the helpers now (else the first big fan-out does); resolves once they wait for work. */
  async start(): Promise<void> {
    const deadline = performance.now() + WAIT_LIMIT_MS;
    while (!this.#ready(this.#fds.length) && !this.#broken) {
      if (performance.now() > deadline)
        throw new Error(`fan-out helper threads did not start within ${WAIT_LIMIT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** Stops the helpers (they do not keep the process alive anyway). */
  async close(): Promise<void> {
    this.#broken = true;
    await Promise.all(this.#stopHelpers().map((h) => h.terminate()));
  }

  /** Tells the helpers to leave their loop and forgets them; returns them, for `terminate`. */
  #stopHelpers(): Worker[] {
    const helpers = this.#helpers;
    this.#helpers = [];
    Atomics.store(this.#control, STOP, 1);
    Atomics.add(this.#control, GENERATION, 1);
    Atomics.notify(this.#control, GENERATION);
    return helpers;
  }

  /**
   * True when the helpers wait for work with room for `sockets`; else starts them (over bigger
   * shared lists when they had too little room) and says false: a thread takes tens of ms to
   * start, and no broadcast waits for that. False for good once broken.
   */
  #ready(sockets: number): boolean {
    if (this.#broken) return false;
    if (this.#helpers.length > 0 && this.#fds.length >= sockets) return this.#started === this.threads;
    for (const helper of this.#stopHelpers()) void helper.terminate();
    this.#started = 0;
    const capacity = Math.max(INITIAL_CAPACITY, 2 ** Math.ceil(Math.log2(sockets)));
    this.#control = sharedInts(RANGES + 2 * this.threads);
    this.#fds = sharedInts(capacity);
    this.#written = sharedInts(capacity);
    this.#helpers = Array.from({ length: this.threads }, (_, index) => {
      const helper = new Worker(HELPER_SOURCE, {
        eval: true,
        workerData: {
          control: this.#control.buffer,
          fds: this.#fds.buffer,
          written: this.#written.buffer,
          frame: this.#frame.buffer,
          index,
        },
      });
      helper.unref();
      helper.once('message', () => {
        if (this.#helpers.includes(helper)) this.#started++;
      });
      helper.on('error', (err) => this.#fail(err));
      helper.on('exit', (code) => {
        if (!this.#broken && this.#helpers.includes(helper)) this.#fail(new Error(`fan-out helper exited (${code})`));
      });
      return helper;
    });
    return false;
  }

  #fail(err: Error): void {
    if (this.#broken) return;
    this.#onFailure?.(err);
    void this.close();
  }
}

function sharedInts(length: number): Int32Array<SharedArrayBuffer> {
  return new Int32Array(new SharedArrayBuffer(4 * length));
}

/** The socket's descriptor when a raw write to it is the same as `socket.write`, else -1. */
function fdOf(socket: Duplex): number {
  if ((socket as Duplex & { encrypted?: boolean }).encrypted === true) return -1;
  if (socket.destroyed || socket.writableLength > 0 || socket.writableCorked > 0 || (socket as Socket).pending)
    return -1;
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : -1;
}
