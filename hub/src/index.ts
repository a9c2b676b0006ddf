/** @hotkey/hub: the hot-key hub. Explicit exports only. */
export { startHub, Hub } from './hub.ts';
export { DEFAULT_TUNABLES } from './options.ts';
export type { HubConfigInput, HubOptions, HubTunables } from './options.ts';
export { LocalCoordinator } from './local-coordinator.ts';
export type { LocalCoordinatorOptions } from './local-coordinator.ts';
export type { AppAuth, Coordinator, Health, HubEvent, HubStatus } from './coordinator.ts';
export { loadHubConfig, parseHubConfig } from './config.ts';
export type { AppConfig, HubConfig } from './config.ts';
export { Aggregator } from './aggregator.ts';
export type { AggregatorOptions, AggregatorListener, DemoteReason, HotKeyView } from './aggregator.ts';
export { HttpErrorCode } from './http-api.ts';
export type { HotKeyRow, InstanceRow } from './hub-core.ts';
