/**
 * The conformance kit: checks a hub or a client against the numbered rules of the wire protocol
 * (sdk/src/wire/PROTOCOL.md). `hotkey-hub conformance` (conformance-cli.ts) is its command; tests and
 * tools may call it directly.
 */
export { checkHub, CHECK_KEY } from './hub-check.ts';
export type { HubCheckOptions } from './hub-check.ts';
export { startClientCheck } from './client-check.ts';
export type { ClientCheck, ClientCheckOptions } from './client-check.ts';
export { CLIENT_RULES, HUB_RULES, Results } from './rules.ts';
export type { RuleId, RuleResult, RuleStatus } from './rules.ts';
