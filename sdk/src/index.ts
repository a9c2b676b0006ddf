export { ErrorCode, HotKeyError, ProtocolError, ValidationError } from './errors.ts';
export { DEFAULT_RULE, RuleSet, parseRules } from './rules.ts';
export type { Rule } from './rules.ts';
