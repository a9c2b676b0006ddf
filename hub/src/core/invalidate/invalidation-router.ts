/**
 * Invalidations through the hub: an SDK's InvalidateRequest (or the API's) is broadcast to every
 * SDK of the app, and the writer's Ack waits until every session that might serve the key — those
 * connected at that moment and closed ones whose lease may still run — has applied the broadcast
 * seq or had its lease lapse (fenced: named in the Ack). No ack on a plain timeout. Leases are
 * granted here too: a session lagging behind an invalidation gets none (invalidations.ts). The
 * per-app InvalidationTracker keeps the pending ones; this module is the protocol around it.
 */
import {
  CloseCode,
  encode,
  MAX_FENCED_IDS,
  HOLDERS_VERSION,
  MsgType,
  type Grant,
  type Invalidate,
  type InvalidateRequest,
} from '@hotkey/sdk/protocol';
import { ErrorCode, ProtocolError } from '@hotkey/sdk';
import type { HubEvent } from '../coordinator.ts';
import type { AckResult } from './invalidations.ts';
import type { AppState } from '../apps.ts';
import { Directed } from './directed.ts';
import type { HubMetrics } from '../observe/hub-metrics.ts';
import type { Session } from '../ingest/session.ts';

export interface InvalidationRouterOptions {
  hubId: string;
  metrics: HubMetrics;
  /** wall clock in ms: event times, and when a pushed value is next refreshed */
  wallNow: () => number;
  /** monotonic clock for leases and ack latency */
  monoNow: () => number;
  /** the lease granted to each session */
  leaseMs: number;
  /** records the event (cluster-wide history, the live feed) */
  publish: (event: HubEvent) => void;
  /** bytes of an update's value at most (tunable maxPushBytes) */
  maxPushBytes: number;
  /**
   * `monoNow` time before which an invalidation of the key (`flush`: of a namespace) must not be
   * acked: owner changes (ownership-fence.ts) @default none
   */
  notBefore?: (key: string, flush: boolean) => number;
  /** whether a registration of the key must be refused for now (directed.ts) @default never */
  holdsWait?: (key: string) => boolean;
}

/** What an update adds to its Invalidate broadcast. */
type Update = Pick<Invalidate, 'value' | 'ver' | 'form'>;

export class InvalidationRouter {
  readonly #opts: InvalidationRouterOptions;
  /** protocol 3: registrations and invalidations sent to holders only (directed.ts) */
  readonly directed: Directed;

  constructor(options: InvalidationRouterOptions) {
    this.#opts = options;
    this.directed = new Directed({
      metrics: options.metrics,
      monoNow: options.monoNow,
      leaseMs: options.leaseMs,
      ...(options.holdsWait === undefined ? {} : { holdsWait: options.holdsWait }),
    });
  }

  /**
   * An SDK's request: broadcast now; Ack the writer once every session that might serve the key
   * applied it or was fenced. Its event is published when the ack is decided, with its time.
   */
  request(app: AppState, session: Session, request: InvalidateRequest): void {
    const { metrics } = this.#opts;
    if (request.pushed === true && !app.shares.supplies(request.key, session)) {
      // the value it pushed is gone everywhere already (a newer value or an invalidation went out)
      metrics.pushedInvalidationsMoot++;
      app.broadcaster.sendTo(
        session.peer,
        encode({ t: MsgType.Ack, id: request.id, seq: app.broadcaster.seq, fenced: [], ms: 0 }),
      );
      return;
    }
    const at = this.#opts.wallNow();
    const flush = request.flush === true;
    const notBefore = this.#opts.notBefore?.(request.key, flush) ?? 0;
    if (this.directed.applies(app, request.key, flush)) {
      const waits = this.directed.invalidate(app, session, request.key);
      const seq = app.broadcaster.seq;
      app.drops.track(request.key, waits, this.#opts.monoNow(), (settled) =>
        this.#settled(app, session, request, seq, at, notBefore, settled),
      );
      return;
    }
    const seq = this.broadcast(app, request.key, false, flush, false, {
      update: this.#update(app, session, request),
      pushed: request.pushed === true,
    });
    app.waiters ??= [...app.sessions, ...app.lingering];
    app.invalidations.track(seq, app.waiters, this.#opts.monoNow(), (settled) =>
      this.#settled(app, session, request, seq, at, notBefore, settled),
    );
  }

  /** Every waiter applied or was fenced (`settled` undefined: dropped): ack, after `notBefore`. */
  #settled(
    app: AppState,
    session: Session,
    request: InvalidateRequest,
    seq: number,
    at: number,
    notBefore: number,
    settled: AckResult | undefined,
  ): void {
    const hold = settled === undefined ? 0 : notBefore - this.#opts.monoNow();
    if (hold <= 0) return this.#acked(app, session, request, seq, at, settled);
    // the key changed owner lately: its previous owner's sessions may still serve it (ownership-fence.ts)
    const result = { fenced: settled!.fenced, ms: settled!.ms + hold };
    setTimeout(() => this.#acked(app, session, request, seq, at, result), hold).unref();
  }

  /** The ack of an SDK's request is decided: `result` undefined when dropped unacknowledged. */
  #acked(
    app: AppState,
    session: Session,
    request: InvalidateRequest,
    seq: number,
    at: number,
    result: AckResult | undefined,
  ): void {
    const { metrics } = this.#opts;
    const event: HubEvent = {
      type: 'invalidate',
      app: app.name,
      key: request.key,
      qps: 0,
      at,
      hub: this.#opts.hubId,
    };
    if (result === undefined) {
      // dropped unacknowledged (pending bound, shutdown): the writer's invalidate() times out
      metrics.invalidationsDropped++;
      event.acked = false;
    } else {
      const fenced = result.fenced.slice(0, MAX_FENCED_IDS);
      metrics.invalidationAcked(app.name, result.ms);
      event.ackMs = Math.round(result.ms);
      if (fenced.length > 0) {
        metrics.invalidationsFenced++;
        event.fenced = fenced;
      }
      if (!session.closed)
        app.broadcaster.sendTo(session.peer, encode({ t: MsgType.Ack, id: request.id, seq, fenced, ms: result.ms }));
    }
    this.#opts.publish(event);
  }

  /**
   * An InvalidateRequest's value, if it may ride the broadcast: the key is a hot shared key here
   * and the value within maxPushBytes (else the writer hears HK_ERR_PUSH_TOO_LARGE; the
   * invalidation goes out plain either way, so the write is never lost).
   */
  #update(app: AppState, session: Session, request: InvalidateRequest): Update | undefined {
    const { value } = request;
    if (value === undefined || request.flush === true) return undefined;
    if (value.byteLength > this.#opts.maxPushBytes) {
      this.#opts.metrics.updatesOversized++;
      const message = `update of "${request.key}": ${value.byteLength} bytes over maxPushBytes ${this.#opts.maxPushBytes}; invalidated instead`;
      app.broadcaster.sendTo(session.peer, encode({ t: MsgType.Error, code: ErrorCode.PushTooLarge, message }));
      return undefined;
    }
    const ver = app.shares.updated(request.key, session, this.#opts.wallNow(), request.since ?? 0);
    if (ver === undefined) return undefined;
    this.#opts.metrics.updatesPushed++;
    return request.form === undefined ? { value, ver } : { value, ver, form: request.form };
  }

  /**
   * An SDK asks for a lease. A session lagging behind an invalidation for longer than a round trip
   * should take gets none: its lease must run out (or it must apply) before that ack; once it
   * applied, its next request is granted.
   */
  lease(app: AppState, session: Session, id: number): void {
    const now = this.#opts.monoNow();
    if (app.invalidations.blocks(session.appliedSeq, now) || app.drops.blocks(session, now)) return;
    session.leaseUntil = now + this.#opts.leaseMs;
    const grant = { t: MsgType.Grant, id, ms: this.#opts.leaseMs } as Grant;
    if (session.version >= HOLDERS_VERSION) grant.w = app.holders.w;
    app.broadcaster.sendTo(session.peer, encode(grant));
  }

  /**
   * An SDK applied every broadcast up to `seq` and (protocol 3) every Drop up to `d`: pending
   * invalidations it held up may complete.
   */
  applied(app: AppState, session: Session, seq: number, d?: number): void {
    if (d !== undefined) {
      if (d > session.dropsSent) {
        throw new ProtocolError(
          ErrorCode.Protocol,
          `Applied d ${d} is ahead of the last Drop sent, ${session.dropsSent}`,
          CloseCode.Protocol,
        );
      }
      app.drops.applied(session, d, this.#opts.monoNow());
    }
    if (seq > app.broadcaster.seq) {
      throw new ProtocolError(
        ErrorCode.Protocol,
        `Applied seq ${seq} is ahead of the last broadcast seq ${app.broadcaster.seq}`,
        CloseCode.Protocol,
      );
    }
    if (seq > session.appliedSeq) {
      session.appliedSeq = seq;
      app.invalidations.settle(this.#opts.monoNow());
    }
  }

  /**
   * Broadcasts an invalidation of `key` to the app's SDKs; returns its seq. `flush`: `key` names a
   * flushed namespace and every SDK drops every cached value of it (the flag rides along).
   * `publish` false: the caller publishes the event (an SDK's request, once its ack is decided).
   * `update`: the key's new value and version ride along (an update write). `pushed`: a pusher
   * dropping the value it vouched for because it heard a write — that write is relayed by its own
   * writer (or was made without the SDK), so it does not hold later updates back.
   */
  broadcast(
    app: AppState,
    key: string,
    manual: boolean,
    flush = false,
    publish = true,
    { update, pushed = false }: { update?: Update | undefined; pushed?: boolean } = {},
  ): number {
    const seq = app.broadcaster.broadcast(
      flush ? { t: MsgType.Invalidate, key, flush } : { t: MsgType.Invalidate, key, ...update },
    );
    app.holders.written(key, flush);
    // a pushed value loaded before this is void (an update moved the version already)
    if (update === undefined) app.shares.invalidated(key, flush);
    if (!pushed) app.shares.written(key, flush, seq);
    this.#opts.metrics.invalidations++;
    if (!publish) return seq;
    const event: HubEvent = {
      type: 'invalidate',
      app: app.name,
      key,
      qps: 0,
      at: this.#opts.wallNow(),
      hub: this.#opts.hubId,
    };
    if (manual) event.manual = true;
    this.#opts.publish(event);
    return seq;
  }
}
