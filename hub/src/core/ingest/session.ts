/**
 * One client connection's protocol state machine: awaiting Hello -> open -> closed. Decodes every
 * frame with protocol.ts, hands valid messages to the hub core, and turns any fault into an Error
 * frame plus the documented close code. A fault ends only this session; nothing thrown here
 * escapes into the socket layer (a bad connection never affects others).
 */
import { ErrorCode, ProtocolError } from '@hotkey/sdk';
import { closeCodeOf } from '@hotkey/sdk/errors';
import {
  CloseCode,
  decodeClientMessage,
  errorFrame,
  MsgType,
  PROTOCOL_VERSION,
  type ClientMessage,
  type Hello,
  type Hold,
  type InvalidateRequest,
  type Push,
  type Release,
  type Report,
} from '@hotkey/sdk/protocol';
import type { FlowQueue, Intake, IntakeFlow } from './intake.ts';
import { readReport, ReportFrame } from './report-frame.ts';
import type { DropWaiter } from '../invalidate/drop-tracker.ts';
import type { HolderSession } from '../invalidate/holders.ts';
import type { FairShare } from '../aggregate/fair-shares.ts';
import { closeReason, type Peer } from '../peer.ts';
import type { TokenBucket } from '../token-bucket.ts';

export const SessionState = { AwaitingHello: 'awaiting-hello', Open: 'open', Closed: 'closed' } as const;
export type SessionState = (typeof SessionState)[keyof typeof SessionState];

/** What a session needs from the hub core. Refusals throw ProtocolError, AuthError or CapacityError (each with its close code). */
export interface SessionHost {
  hello(session: Session, hello: Hello): void;
  /**
   * Ingests `report.keys[from..]`, stopping after `max` records; returns the index it stopped at.
   * `bytes`: the frame's size, on its first step when known.
   */
  report(session: Session, report: Report, from: number, max: number, bytes?: number): number;
  /** As `report`, for a Report frame read in place, from its cursor's record on. */
  reportFrame(session: Session, frame: ReportFrame, max: number, bytes?: number): number;
  invalidate(session: Session, request: InvalidateRequest): void;
  /** Applied: every broadcast up to `seq` and (protocol 3) every Drop up to `d` */
  applied(session: Session, seq: number, d?: number): void;
  /** protocol 3: a registration of keys before serving them locally (holders.ts) */
  hold(session: Session, hold: Hold): void;
  release(session: Session, release: Release): void;
  resync(session: Session): void;
  /** the SDK asks for a lease (answered with a Grant, or not at all while it lags behind an invalidation) */
  lease(session: Session, id: number): void;
  /** the SDK pushes the value of a shared key it was asked to load (Fill) */
  push(session: Session, push: Push): void;
  /** counts Resyncs coalesced away */
  readonly metrics: { resyncsCoalesced: number };
  /** `minResyncIntervalMs`: Resyncs closer together than this are coalesced */
  readonly tunables: { readonly minResyncIntervalMs: number };
  /** the session ended (idempotent) */
  closed(session: Session): void;
  /** a fault closed the session: count it, log unexpected ones */
  faulted(session: Session, err: unknown): void;
  /** the fair scheduler every open session's frames go through */
  readonly intake: Intake;
}

/** records of one report ingested per scheduling step: a 64k-key report is 16 steps, not one */
export const REPORT_STEP_RECORDS = 4096;
/** frames this small are decoded on arrival, so Applied (cheap, and others' acks wait on it) skips the queue */
const SMALL_FRAME_BYTES = 64;
/**
 * A Lease skips the queue too (a renewal stuck behind a backlog lets the SDK's lease lapse, and its
 * hot keys fall through to the loader), but at most one per this interval: an SDK asks every
 * leaseMs / 4 (500 ms by default), so a faster stream is not a legit SDK and waits its turn.
 */
const LEASE_SKIP_INTERVAL_MS = 100;

/** What is left of a report that did not fit in one scheduling step. */
interface ReportRest {
  report: Report;
  from: number;
}

let nextId = 1;

export class Session implements DropWaiter, HolderSession, IntakeFlow {
  readonly id = nextId++;
  readonly peer: Peer;
  readonly connectedAt: number;
  state: SessionState = SessionState.AwaitingHello;
  app = '';
  instance = '';
  host = '';
  sdk = '';
  /** this instance's bit in the aggregator's reporter bitmaps */
  reporter = 0;
  lastReport = 0;
  appliedSeq = 0;
  /** hub monotonic time its lease ends (0: none granted); outlives the socket (invalidations.ts) */
  leaseUntil = 0;
  /** keys it holds at its app's directory (protocol 3, holders.ts) */
  held: Set<string> | undefined;
  /** the `d` of the last Drop sent, the highest Applied `d`, and the acks waiting on it (drop-tracker.ts) */
  dropsSent = 0;
  dropsApplied = 0;
  dropWaits: DropWaiter['dropWaits'] = undefined;
  /** the protocol version negotiated from its Hello (legacy-sessions.ts for the older one) */
  version = PROTOCOL_VERSION;
  /** promotions this connection may still carry alone (the aggregator's solo budget), set on Hello */
  soloBudget: TokenBucket | undefined;
  /** this connection's share of its app's key table (fair admission, fair-shares.ts), set on Hello */
  fairShare: FairShare | undefined;
  /** the remote address of its socket ('' when the transport gives none): fair admission is per address first */
  remote = '';
  readonly #host: SessionHost;
  #flow: FlowQueue | undefined;
  /** Resyncs answered and coalesced away, for tests */
  readonly resyncs = { answered: 0, coalesced: 0 };
  readonly #wallNow: () => number;
  #lastResyncAt = -Infinity;
  #lastLeaseSkipAt = -Infinity;
  #resyncTimer: ReturnType<typeof setTimeout> | undefined;

  /** @param [wallNow=Date.now] wall clock (ms) for the Resync rate limit */
  constructor(peer: Peer, host: SessionHost, connectedAt: number, wallNow: () => number = Date.now) {
    this.peer = peer;
    this.#host = host;
    this.connectedAt = connectedAt;
    this.#wallNow = wallNow;
  }

  get closed(): boolean {
    return this.state === SessionState.Closed;
  }

  /** true once Hello was accepted (the socket layer's pre-Hello limits stop applying) */
  get admitted(): boolean {
    return this.state === SessionState.Open;
  }

  /**
   * A frame arrived. `binary` is false for WebSocket text frames, which the protocol forbids.
   * Hello is handled at once; after it, frames go through the hub's fair intake (intake.ts), which
   * runs them now or after other connections' turns. Applied skips the queue, and so does a Lease
   * (at most one per LEASE_SKIP_INTERVAL_MS).
   */
  onFrame(data: Uint8Array, binary: boolean): void {
    if (this.state === SessionState.Closed) return;
    try {
      if (!binary)
        throw new ProtocolError(
          ErrorCode.Protocol,
          'text frames are not part of the protocol: send binary msgpack frames',
          CloseCode.Protocol,
        );
      if (this.state === SessionState.AwaitingHello) {
        const msg = decodeClientMessage(data);
        if (msg.t !== MsgType.Hello)
          throw new ProtocolError(
            ErrorCode.Protocol,
            `the first frame must be Hello (t=${MsgType.Hello}), got t=${msg.t}`,
            CloseCode.Protocol,
          );
        this.#host.hello(this, msg);
        return;
      }
      let item: unknown = data;
      if (data.byteLength <= SMALL_FRAME_BYTES) {
        const msg = decodeClientMessage(data);
        if (msg.t === MsgType.Applied) {
          this.#host.applied(this, msg.seq, msg.d);
          return;
        }
        if (msg.t === MsgType.Lease) {
          const now = this.#wallNow();
          if (now - this.#lastLeaseSkipAt >= LEASE_SKIP_INTERVAL_MS) {
            // earlier than in turn: the hub's view still starts after the SDK sent it (safe)
            this.#lastLeaseSkipAt = now;
            this.#host.lease(this, msg.id);
            return;
          }
        }
        // queued decoded (an InvalidateRequest is not decoded twice), but a Report raw: read in place
        if (msg.t !== MsgType.Report) item = msg;
      }
      this.#flow ??= this.#host.intake.flow(this);
      this.#host.intake.submit(this.#flow, item, data.byteLength);
    } catch (err) {
      this.fail(err);
    }
  }

  /**
   * IntakeFlow: one queued frame (raw or decoded) or the rest of a report; returns what is left.
   * A raw Report of the plain shape is read in place (report-frame.ts); any other frame, or one
   * that breaks a rule, is decoded by the protocol module.
   */
  run(item: unknown): unknown {
    if (this.state !== SessionState.Open) return undefined;
    if (item instanceof ReportFrame) return this.#reportFrame(item);
    if ((item as ReportRest).report !== undefined)
      return this.#report((item as ReportRest).report, (item as ReportRest).from);
    const raw = item instanceof Uint8Array;
    if (raw) {
      const frame = readReport(item);
      if (frame !== undefined) return this.#reportFrame(frame, item.byteLength);
    }
    const msg = raw ? decodeClientMessage(item) : (item as ClientMessage);
    switch (msg.t) {
      case MsgType.Report:
        return this.#report(msg, 0, raw ? item.byteLength : undefined);
      case MsgType.InvalidateRequest:
        this.#host.invalidate(this, msg);
        return undefined;
      case MsgType.Applied:
        this.#host.applied(this, msg.seq, msg.d);
        return undefined;
      case MsgType.Hold:
        this.#host.hold(this, msg);
        return undefined;
      case MsgType.Release:
        this.#host.release(this, msg);
        return undefined;
      case MsgType.Resync:
        this.#resync();
        return undefined;
      case MsgType.Lease:
        // queued behind earlier frames: the hub's view of the lease starts late, never early (safe)
        this.#host.lease(this, msg.id);
        return undefined;
      case MsgType.Push:
        this.#host.push(this, msg);
        return undefined;
      case MsgType.Hello:
        throw new ProtocolError(
          ErrorCode.Protocol,
          'Hello was already received on this connection',
          CloseCode.Protocol,
        );
    }
    return undefined;
  }

  /** IntakeFlow: too much queued, stop reading the socket (TCP pushes back on the sender) */
  pause(): void {
    this.peer.pause?.();
  }

  resume(): void {
    if (this.state !== SessionState.Closed) this.peer.resume?.();
  }

  /** IntakeFlow: running a frame threw */
  fault(err: unknown): void {
    this.fail(err);
  }

  #report(report: Report, from: number, bytes?: number): ReportRest | undefined {
    const next = this.#host.report(this, report, from, REPORT_STEP_RECORDS, bytes);
    return next < report.keys.length ? { report, from: next } : undefined;
  }

  #reportFrame(frame: ReportFrame, bytes?: number): ReportFrame | undefined {
    this.#host.reportFrame(this, frame, REPORT_STEP_RECORDS, bytes);
    return frame.index < frame.length ? frame : undefined;
  }

  /**
   * A Resync costs the hub a whole hot-set Snapshot (hundreds of KiB) for 3 bytes in: answer at
   * most one per `minResyncIntervalMs`. A Resync inside the interval is not refused (an SDK may see
   * two gaps in a row) but coalesced: one Snapshot goes out when the interval ends, however many
   * Resyncs arrived meanwhile, and it reflects the hot set at that time.
   */
  #resync(): void {
    const interval = this.#host.tunables.minResyncIntervalMs;
    const wait = this.#lastResyncAt + interval - this.#wallNow();
    if (wait <= 0) {
      this.#lastResyncAt = this.#wallNow();
      this.resyncs.answered++;
      this.#host.resync(this);
      return;
    }
    this.resyncs.coalesced++;
    this.#host.metrics.resyncsCoalesced++;
    if (this.#resyncTimer !== undefined) return;
    this.#resyncTimer = setTimeout(() => {
      this.#resyncTimer = undefined;
      if (this.state !== SessionState.Open) return;
      try {
        this.#lastResyncAt = this.#wallNow();
        this.resyncs.answered++;
        this.#host.resync(this);
      } catch (err) {
        this.fail(err);
      }
    }, wait);
    this.#resyncTimer.unref?.();
  }

  /** The hello deadline passed without a Hello. */
  helloTimedOut(timeoutMs: number): void {
    if (this.state !== SessionState.AwaitingHello) return;
    this.fail(new ProtocolError(ErrorCode.HelloTimeout, `no Hello within ${timeoutMs} ms`, CloseCode.HelloTimeout));
  }

  /**
   * Sends an Error frame and closes with the error's close code: every refusal or protocol fault
   * (ProtocolError, AuthError, CapacityError: closeCodeOf) the same way; anything else is a hub
   * fault, CloseCode.InternalError, and its message stays in the hub's log.
   */
  fail(err: unknown): void {
    if (this.state === SessionState.Closed) return;
    this.state = SessionState.Closed;
    if (this.#flow !== undefined) this.#host.intake.close(this.#flow);
    clearTimeout(this.#resyncTimer);
    const closeCode = closeCodeOf(err);
    const peerFault = closeCode !== undefined;
    try {
      this.#host.faulted(this, err);
      this.#host.closed(this);
    } catch {
      // the host's bookkeeping failing must not keep a broken socket open
    }
    try {
      this.peer.send(errorFrame(peerFault ? err : new Error('internal hub error')));
    } catch {
      // the socket may already be gone; closing below still matters
    }
    try {
      // a socket the intake paused must read again, or the close handshake waits for ws's 30 s timeout
      this.peer.resume?.();
      this.peer.close(
        closeCode ?? CloseCode.InternalError,
        closeReason(peerFault ? (err as Error).message : 'internal hub error'),
      );
    } catch {
      // already closed
    }
  }

  /** The socket closed (either side). */
  onClose(): void {
    clearTimeout(this.#resyncTimer);
    if (this.state === SessionState.Closed) return;
    this.state = SessionState.Closed;
    if (this.#flow !== undefined) this.#host.intake.close(this.#flow);
    this.#host.closed(this);
  }
}
