/**
 * A decision becomes news: a promotion or demotion the aggregator decided is broadcast to the
 * app's SDKs (frames.ts builds the frames), counted in the hub's metrics, logged as an event and
 * published to the cluster's events feed through the Coordinator. A promotion the ownership
 * fence holds back (`holdBack`: the key's previous owner may still ack its writes without a word
 * to this hub's sessions) is kept in the app's `heldPromotions` and announced by `release` once
 * the fence lets it go; until then the key is not in any Snapshot either (hello.ts).
 */
import type { Rule } from '@hotkey/sdk/rules';
import type { DemoteReason, HotKeyView } from '../aggregate/aggregator.ts';
import type { AppState } from '../apps.ts';
import type { Coordinator, HubEvent } from '../coordinator.ts';
import { demoteMessage, promoteMessage, replicaStepMessage } from './frames.ts';
import type { HubMetrics } from '../observe/hub-metrics.ts';
import type { Logger } from '../logger.ts';
import type { KeyPrivacy } from '../observe/key-privacy.ts';

export interface AnnouncerOptions {
  hubId: string;
  coordinator: Coordinator;
  metrics: HubMetrics;
  logger: Logger;
  /** wall clock in ms, for event times */
  wallNow: () => number;
  /** how keys are shown in log lines and events */
  privacy: KeyPrivacy;
  /** whether a promotion of the key must wait (ownership-fence.ts promotionWaits) @default never */
  holdBack?: (key: string) => boolean;
  /** monotonic clock in ms, for how long a promotion was held @default performance.now */
  monoNow?: () => number;
}

export class Announcer {
  readonly #hubId: string;
  readonly #coordinator: Coordinator;
  readonly #metrics: HubMetrics;
  readonly #logger: Logger;
  readonly #wallNow: () => number;
  readonly #privacy: KeyPrivacy;
  readonly #holdBack: ((key: string) => boolean) | undefined;
  readonly #monoNow: () => number;

  constructor(options: AnnouncerOptions) {
    this.#holdBack = options.holdBack;
    this.#monoNow = options.monoNow ?? (() => performance.now());
    this.#hubId = options.hubId;
    this.#coordinator = options.coordinator;
    this.#metrics = options.metrics;
    this.#logger = options.logger;
    this.#wallNow = options.wallNow;
    this.#privacy = options.privacy;
  }

  /** A read-hot uncached key whose QPS crossed a replica step is promoted again with the new count. */
  restepped(app: AppState, v: HotKeyView, now: number): void {
    if (app.heldPromotions.has(v.key)) return;
    const replicas = app.replicas.update(v.key, v.rule, v.qps);
    if (replicas === undefined) return;
    app.broadcaster.broadcast(replicaStepMessage(v, now, replicas));
    this.#logger.info(
      { evt: 'replicas', app: app.name, key: this.#privacy.show(app.name, v.key), qps: v.qps, replicas },
      'replica count changed',
    );
  }

  promoted(app: AppState, key: string, rule: Rule, qps: number, latencyMs: number | undefined, manual: boolean): void {
    if (this.#holdBack?.(key) === true) {
      if (!app.heldPromotions.has(key))
        app.heldPromotions.set(key, { rule, qps, latencyMs, manual, at: this.#monoNow() });
      return;
    }
    app.heldPromotions.delete(key);
    const at = this.#wallNow();
    const started = performance.now();
    const replicas = app.replicas.start(key, rule, qps);
    app.broadcaster.broadcast(promoteMessage(key, rule, qps, at, replicas));
    const fanoutMs = performance.now() - started;
    app.shares.promoted(key, rule, at); // after the Promote: the SDK asked knows the key is hot
    this.#metrics.promotions++;
    this.#metrics.promoted(app.name, fanoutMs, latencyMs);
    this.#logger.info(
      {
        evt: 'promote',
        app: app.name,
        key: this.#privacy.show(app.name, key),
        qps,
        threshold: rule.threshold,
        rule: rule.match,
        latencyMs,
        fanoutMs: Math.round(fanoutMs * 1000) / 1000,
        sockets: app.broadcaster.peers.size,
        manual: manual || undefined,
      },
      'key promoted',
    );
    const event: HubEvent = { type: 'promote', app: app.name, key, qps, at, hub: this.#hubId };
    if (latencyMs !== undefined) event.latencyMs = latencyMs;
    if (manual) event.manual = true;
    this.publish(event);
  }

  /**
   * Announces the held promotions the fence lets go now; forgets those of keys no longer hot or
   * no longer this hub's (`owns`). Called every tick.
   */
  release(app: AppState, owns: (key: string) => boolean): void {
    if (app.heldPromotions.size === 0) return;
    for (const [key, held] of [...app.heldPromotions]) {
      if (!owns(key) || !app.aggregator.isHot(key)) app.heldPromotions.delete(key);
      else if (this.#holdBack?.(key) !== true) {
        const heldMs = this.#monoNow() - held.at;
        const latencyMs = held.latencyMs === undefined ? undefined : held.latencyMs + heldMs;
        this.promoted(app, key, held.rule, held.qps, latencyMs, held.manual);
      }
    }
  }

  demoted(app: AppState, key: string, qps: number, reason: DemoteReason): void {
    // never announced: nothing to take back
    if (app.heldPromotions.delete(key)) return;
    app.replicas.forget(key);
    app.broadcaster.broadcast(demoteMessage(key));
    app.shares.demoted(key);
    this.#metrics.demotions++;
    this.#logger.info(
      { evt: 'demote', app: app.name, key: this.#privacy.show(app.name, key), qps, reason },
      'key demoted',
    );
    this.publish({ type: 'demote', app: app.name, key, qps, at: this.#wallNow(), hub: this.#hubId, reason });
  }

  /** Every event leaves through here, its key as the app's privacy shows it (history, feed, webhooks). */
  publish(event: HubEvent): void {
    try {
      this.#coordinator.publishEvent(this.#privacy.event(event));
    } catch (err) {
      this.#logger.error(
        { evt: 'publish_failed', type: event.type, app: event.app, err },
        'publishing an event failed',
      );
    }
  }
}
