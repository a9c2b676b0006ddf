/**
 * Invalidations through the hub: an SDK's InvalidateRequest (or the API's) is broadcast to every
 * SDK of the app, and the writer's Ack waits until every session connected at that moment has
 * applied the broadcast seq (or the ack timeout passes). The per-app InvalidationTracker keeps
 * the pending ones; this module is the protocol around it.
 */
import { CloseCode, encode, MsgType, type InvalidateRequest } from '@hotkey/sdk/protocol';
import { ErrorCode, ProtocolError } from '@hotkey/sdk';
import type { HubEvent } from '../cluster/coordinator.ts';
import type { AppState } from './apps.ts';
import type { HubMetrics } from './hub-metrics.ts';
import type { Session } from './session.ts';

export interface InvalidationRouterOptions {
  hubId: string;
  metrics: HubMetrics;
  now: () => number;
  /** records the event (cluster-wide history, the live feed) */
  publish: (event: HubEvent) => void;
}

export class InvalidationRouter {
  readonly #opts: InvalidationRouterOptions;

  constructor(options: InvalidationRouterOptions) {
    this.#opts = options;
  }

  /** An SDK's request: broadcast now, Ack the writer once the sessions connected now applied it. */
  request(app: AppState, session: Session, request: InvalidateRequest): void {
    const seq = this.broadcast(app, request.key, false, request.flush === true);
    app.waiters ??= [...app.sessions];
    const started = this.#opts.now();
    app.invalidations.track(seq, app.waiters, started, (timedOut) => {
      if (timedOut) this.#opts.metrics.invalidationTimeouts++;
      this.#opts.metrics.invalidationAcked(app.name, this.#opts.now() - started);
      if (!session.closed) app.broadcaster.sendTo(session.peer, encode({ t: MsgType.Ack, id: request.id, seq }));
    });
  }

  /** An SDK applied every broadcast up to `seq`: pending invalidations it held up may complete. */
  applied(app: AppState, session: Session, seq: number): void {
    if (seq > app.broadcaster.seq) {
      throw new ProtocolError(
        ErrorCode.Protocol,
        `Applied seq ${seq} is ahead of the last broadcast seq ${app.broadcaster.seq}`,
        CloseCode.Protocol,
      );
    }
    if (seq > session.appliedSeq) {
      session.appliedSeq = seq;
      app.invalidations.settle();
    }
  }

  /**
   * Broadcasts an invalidation of `key` to the app's SDKs; returns its seq. `flush`: `key` names a
   * flushed namespace and every SDK drops every cached value of it (the flag rides along).
   */
  broadcast(app: AppState, key: string, manual: boolean, flush = false): number {
    const seq = app.broadcaster.broadcast(
      flush ? { t: MsgType.Invalidate, key, flush } : { t: MsgType.Invalidate, key },
    );
    this.#opts.metrics.invalidations++;
    const event: HubEvent = {
      type: 'invalidate',
      app: app.name,
      key,
      qps: 0,
      at: this.#opts.now(),
      hub: this.#opts.hubId,
    };
    if (manual) event.manual = true;
    this.#opts.publish(event);
    return seq;
  }
}
