/**
 * @hotkey/hub: what an embedder needs to run a hub: start one (alone or as a cluster member on
 * Redis), load its config, log and be notified. Explicit exports only; the hub's internals
 * (its aggregator, its core) are not part of it.
 */
export { startHub, Hub } from './server/hub.ts';
export { DEFAULT_HOST, DEFAULT_PORT } from './server/options.ts';
export type { HubConfigInput, HubOptions, HubTlsOptions } from './server/options.ts';
export { DEFAULT_TUNABLES } from './core/tunables.ts';
export type { HubTunables } from './core/tunables.ts';
export { createLogger } from './server/logger.ts';
export type { LoggerOptions } from './server/logger.ts';
export { loggerFromFunction, silentLogger } from './core/logger.ts';
export type { Logger, LogLevel } from './core/logger.ts';
export { LocalCoordinator } from './cluster/local-coordinator.ts';
export type { LocalCoordinatorOptions } from './cluster/local-coordinator.ts';
export { RedisCoordinator } from './cluster/redis-coordinator.ts';
export type { RedisCoordinatorOptions } from './cluster/redis-coordinator.ts';
export type {
  AppAuth,
  AppSeed,
  Coordinator,
  CoordinatorCounters,
  Health,
  HubEvent,
  HubStatus,
} from './core/coordinator.ts';
export { loadHubConfig, parseHubConfig } from './server/config.ts';
export type { AppConfig, HubConfig } from './server/config.ts';
export type { AppSummary, HotKeyRow, InstanceRow } from './core/observe/app-rows.ts';
export type { ReloadResult, ReloadSource } from './server/live-config.ts';
export { NOTIFY_EVENTS } from './notify/notify-config.ts';
export type { NotifyEvent, NotifyTarget } from './notify/notify-config.ts';
export { DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, signature } from './notify/notifier.ts';
export type { NotifyPayload } from './notify/notifier.ts';
