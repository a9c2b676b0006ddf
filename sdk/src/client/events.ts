/**
 * What a HotKeyClient emits: the events and the info each one carries. The client re-exports
 * these types; they live apart so that the parts which emit (dispatch.ts) need not import the
 * client itself.
 */
import type { SdkDemoteReason } from '../wire/protocol.ts';
import type { RuleKind } from '../rules.ts';

export interface PromoteInfo {
  hub: string;
  qps: number;
  /** ms the promotion lives from now without renewal: the rule's hotMs for a fresh promotion, what is left of it for one learnt from a snapshot */
  ttlMs: number;
  cacheTtlMs: number;
  cache: boolean;
  /** which accesses made it hot: its rule's kind ('read', 'write' or 'any') */
  kind: RuleKind;
  /** copies of the key serving reads, itself included (1: no replica keys; see redis/read/replicas.ts) */
  replicas: number;
}
export interface DemoteInfo {
  hub: string;
  /** 'demote': the hub said so; 'expired': the promotion ran out; 'stale': cut off from the hub; 'snapshot': absent from a resync; 'evicted': over maxHotKeys */
  reason: SdkDemoteReason;
}
export interface InvalidateInfo {
  hub: string;
  /** the broadcast's sequence number; for a Drop (protocol 3: an invalidation sent to the key's holders only), the link's last one */
  seq: number;
  /** the key names a flushed namespace (`invalidateAll`): every cached value was dropped */
  flush?: true;
}

export interface ClientEvents {
  promote: [key: string, info: PromoteInfo];
  demote: [key: string, info: DemoteInfo];
  invalidate: [key: string, info: InvalidateInfo];
  /** a Redis node's circuit breaker changed state (the ioredis and node-redis `withHotKeys`) */
  breaker: [info: { node: string; state: 'closed' | 'open' | 'half-open' }];
  /** network and protocol faults; emitted only when someone listens */
  error: [error: Error];
  /** close() ran: integrations release what they hold for this client (the ioredis tracking connections) */
  close: [];
}

/** The client's `emit`, as handed to the parts that emit on its behalf. */
export type EmitClientEvent = <K extends keyof ClientEvents>(event: K, ...args: ClientEvents[K]) => void;
