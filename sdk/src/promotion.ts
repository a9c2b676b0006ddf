/**
 * What an SDK learns about a hot key when its hub promotes it: one type for the wire (a
 * Snapshot's entries, wire/messages.ts) and the hot set that keeps them (cache/hot-set.ts), so
 * both read the same fields with the same defaults. No `node:` imports (the wire is runtime-agnostic).
 */
import type { RuleKind } from './rules.ts';

export interface Promotion {
  /** ms the promotion lives from now without renewal */
  ttlMs: number;
  cacheTtlMs: number;
  cache: boolean;
  qps: number;
  /** which accesses made it hot: as Promote's `kind` @default 'read' */
  kind?: RuleKind;
  /** copies of the key that serve reads, itself included: as Promote's `replicas` @default 1 */
  replicas?: number;
}

/** A promotion with its key: an entry of a Snapshot, or of a hot set's replacement. */
export interface HotEntry extends Promotion {
  key: string;
}
