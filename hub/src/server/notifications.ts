/**
 * Plugs the notifier (notify/) into a hub: this hub's own events go to the config's `notify`
 * targets (in a cluster every hub hears every event; only the deciding hub notifies, so a receiver
 * gets each decision once), a reload replaces the targets, and /metrics counts the outcomes.
 */
import type { Coordinator } from '../core/coordinator.ts';
import type { Logger } from '../core/logger.ts';
import type { MetricsRegistry } from '../http/metrics.ts';
import { Notifier } from '../notify/notifier.ts';
import type { LiveConfig } from './live-config.ts';

export function startNotifications(parts: {
  hubId: string;
  coordinator: Coordinator;
  live: LiveConfig;
  metrics: MetricsRegistry;
  logger: Logger;
}): Notifier {
  const notifier = new Notifier({ logger: parts.logger });
  notifier.setTargets(parts.live.config?.notify ?? []);
  parts.coordinator.onEvent((event) => {
    if (event.hub === parts.hubId) notifier.offer(event);
  });
  parts.live.onApply((config) => (notifier.setTargets(config.notify ?? []) ? ['notify'] : []));
  const s = notifier.stats;
  const series = [
    ['hotkey_notify_sent_total', 'counter', 'Notifications a webhook answered with 2xx.', () => s.sent],
    [
      'hotkey_notify_failed_total',
      'counter',
      'Notifications given up (retries exhausted, a 4xx answer).',
      () => s.failed,
    ],
    ['hotkey_notify_dropped_total', 'counter', "Notifications dropped: the target's queue was full.", () => s.dropped],
    ['hotkey_notify_retries_total', 'counter', 'Notification attempts after the first.', () => s.retries],
    ['hotkey_notify_queued', 'gauge', 'Notifications waiting or in flight.', () => notifier.queued],
  ] as const;
  for (const [name, type, help, read] of series) parts.metrics.addSeries({ name, type, help, read });
  return notifier;
}
