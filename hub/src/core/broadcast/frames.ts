/**
 * Every frame the hub core sends SDKs about hot keys and membership, built in one place: what a
 * Welcome, Snapshot, Promote, Demote, Limit or Members frame carries is read here, and the rest
 * of the core only decides when to send one. Builders of frames that go to one peer return the
 * encoded bytes; builders of broadcasts return the message, which the Broadcaster sequences and
 * encodes once for all its sockets.
 */
import {
  encode,
  MAX_FRAME_BYTES,
  MAX_LIMIT_KEYS,
  MsgType,
  type Demote,
  type HotEntry,
  type Member,
  type Promote,
  type Welcome,
} from '@hotkey/sdk/protocol';
import type { Rule } from '@hotkey/sdk/rules';
import type { HotKeyView } from '../aggregate/aggregator.ts';
import { SHARE_TTL_MS } from '../decide/rate-splits.ts';

/** What a Welcome tells a new SDK session (all of it but the type and the protocol version). */
export type WelcomeFields = Omit<Welcome, 't' | 'v'>;

/** @param version the version the session speaks, negotiated from its Hello */
export function welcomeFrame(fields: WelcomeFields, version: number): Uint8Array {
  return encode({ t: MsgType.Welcome, v: version, ...fields });
}

/** Rule kinds other than plain reads travel in the frame; a read promotion carries no `kind`. */
function kindField(rule: Rule): { kind?: Rule['kind'] } {
  return rule.kind === undefined || rule.kind === 'read' ? {} : { kind: rule.kind };
}

/** A promotion: the key, its rule's lifetimes and caching, the replica count when above 1. */
export function promoteMessage(
  key: string,
  rule: Rule,
  qps: number,
  at: number,
  replicas: number,
): Omit<Promote, 'seq'> {
  return {
    t: MsgType.Promote,
    key,
    qps,
    hotMs: rule.hotMs,
    cacheTtlMs: rule.cacheTtlMs,
    cache: rule.cache,
    at,
    ...kindField(rule),
    ...(replicas > 1 ? { replicas } : {}),
  };
}

/** A hot key promoted again because its QPS crossed a replica step, with its remaining lifetime and its kind (the SDK takes a Promote without one as a read promotion). */
export function replicaStepMessage(view: HotKeyView, now: number, replicas: number): Omit<Promote, 'seq'> {
  return {
    t: MsgType.Promote,
    key: view.key,
    qps: view.qps,
    hotMs: Math.max(1, Math.ceil(view.ttlMs)),
    cacheTtlMs: view.rule.cacheTtlMs,
    cache: view.rule.cache,
    at: now,
    ...kindField(view.rule),
    replicas,
  };
}

export function demoteMessage(key: string): Omit<Demote, 'seq'> {
  return { t: MsgType.Demote, key };
}

/**
 * The hot set in one frame, highest QPS first. A frame must stay under MAX_FRAME_BYTES (the SDK
 * refuses larger ones), so a huge hot set is cut to its highest-QPS keys: a key left out is
 * merely served by the loader until its next Promote, which is safe.
 */
export function snapshotFrame(views: HotKeyView[], replicasOf: (key: string) => number, seq: number): Uint8Array {
  views.sort((a, b) => b.qps - a.qps);
  const hot: HotEntry[] = [];
  let bytes = 64;
  for (const v of views) {
    bytes += 3 * v.key.length + 80; // worst-case UTF-8 key + field names and numbers
    if (bytes > MAX_FRAME_BYTES) break;
    const replicas = replicasOf(v.key);
    hot.push({
      key: v.key,
      ttlMs: Math.ceil(v.ttlMs),
      cacheTtlMs: v.rule.cacheTtlMs,
      cache: v.rule.cache,
      qps: v.qps,
      ...kindField(v.rule),
      ...(replicas > 1 ? { replicas } : {}),
    });
  }
  return encode({ t: MsgType.Snapshot, seq, hot });
}

/** One session's rate splits, as many Limit frames as MAX_LIMIT_KEYS requires, built as they are sent. */
export function* limitFrames(keys: string[], rates: number[]): Generator<Uint8Array> {
  for (let start = 0; start < keys.length; start += MAX_LIMIT_KEYS)
    yield encode({
      t: MsgType.Limit,
      keys: keys.slice(start, start + MAX_LIMIT_KEYS),
      rates: rates.slice(start, start + MAX_LIMIT_KEYS),
      ttlMs: SHARE_TTL_MS,
    });
}

export function membersFrame(epoch: number, members: Member[]): Uint8Array {
  return encode({ t: MsgType.Members, epoch, members });
}
