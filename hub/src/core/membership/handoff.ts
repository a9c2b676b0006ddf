/**
 * Window handoff between hubs on a membership change. When the member list changes, the keys this
 * hub tracked that now belong to another hub (a hub joined and took them, or this hub is leaving)
 * are sent to their new owner with their windows and hot state (window-transfer.ts), in bounded
 * chunks (handoff-chunk.ts) through the coordinator (a per-recipient list in Redis). The receiver
 * merges them, so a key mid-surge is promoted as if its owner had not changed.
 *
 * The receiver trusts nothing in a chunk it can check itself. Refused, each with its reason
 * (HandoffRefusal: a counter and a warning), the rest going on untouched:
 *   - a sender that is not a member and was none in the last HANDOFF_GRACE_MS (not_member);
 *   - an epoch older than this hub's, or a newer one this hub has not reached within
 *     HANDOFF_GRACE_MS (stale_epoch): ownership is judged at the epoch it names, so a chunk
 *     waits (bounded) until this hub's list catches up;
 *   - a chunk over its bounds, or a sender past `maxKeys` keys in one epoch (too_large);
 *   - per key: one this hub does not own at the epoch, or whose previous owner cannot have been
 *     the sender (not_owner: the sender must outrank every other member but this hub in the
 *     rendezvous order, which holds both for a leaving owner and for one a joiner displaced);
 *     one another chunk of the epoch already handed over (conflict: two hubs claiming one key).
 *
 * A crash hands nothing over: see docs/concepts/ownership.md.
 *
 * Every chunk also tells its receiver the epoch its sender had reached (`heard`). On each change
 * a hub sends each hub that gains keys from it — the joiners, or every member when it leaves — a
 * marker (a chunk with no keys) at the new epoch, whatever it tracked: the receiver promotes the
 * keys it gained from this hub only once this hub knows it no longer owns them
 * (ownership-fence.ts `promotionWaits`).
 */
import { Ownership } from '@hotkey/sdk/ownership';
import type { Member } from '@hotkey/sdk/protocol';
import type { Aggregator } from '../aggregate/aggregator.ts';
import {
  ChunkError,
  decodeChunk,
  encodeChunks,
  encodeMarker,
  type HandoffChunk,
  type HandoffRefusal,
} from './handoff-chunk.ts';
import type { Logger } from '../logger.ts';

/** how long a member that left may still hand over, and a chunk may wait for its epoch (ms) */
export const HANDOFF_GRACE_MS = 5000;
/** chunks waiting for this hub to reach their epoch, at most */
export const HANDOFF_PENDING_MAX = 256;

/** What the handoff did, for /metrics (`hotkey_handoff_*`). */
export interface HandoffCounters {
  chunksSent: number;
  keysSent: number;
  bytesSent: number;
  /** keys not handed over: past `maxKeys` at the sender (the smallest windows go first) */
  keysDropped: number;
  chunksReceived: number;
  keysReceived: number;
  /** handed-over keys promoted here by the merge (hot at the sender, or over the threshold with it) */
  keysPromoted: number;
  /** refusals by reason: whole chunks, or keys for not_owner / conflict */
  refused: Record<HandoffRefusal, number>;
}

export function emptyHandoffCounters(): HandoffCounters {
  return {
    chunksSent: 0,
    keysSent: 0,
    bytesSent: 0,
    keysDropped: 0,
    chunksReceived: 0,
    keysReceived: 0,
    keysPromoted: 0,
    refused: {
      malformed: 0,
      too_large: 0,
      not_member: 0,
      stale_epoch: 0,
      not_owner: 0,
      conflict: 0,
      unknown_app: 0,
      backlog: 0,
    },
  };
}

/** which keys this hub owns; undefined: every key */
export type Accept = ((key: string) => boolean) | undefined;

/** a membership change whose moving keys are still counted here */
interface Draining {
  epoch: number;
  ownership: Ownership;
  /** this hub's keys at the epoch */
  own: (key: string) => boolean;
  /** the same as the core sees it (undefined while it is the only member) */
  accept: Accept;
  /** those and the keys moving away */
  union: Accept;
  /** this hub stays a member (else it is leaving: its rounds end once no SDK is connected) */
  staying: boolean;
  /** monoNow time after which no further round is due */
  until: number;
  timer: NodeJS.Timeout;
}

/** a chunk waiting for this hub to reach its epoch, since `at` (monoNow) */
interface Waiting {
  chunk: HandoffChunk;
  at: number;
}

export interface HandoffOptions {
  selfId: string;
  /** keys one handoff (one membership change) carries at most, and one sender may hand over per epoch; 0 disables */
  maxKeys: number;
  /** delivers a chunk to hub `to`; never throws */
  send: (to: string, bytes: Uint8Array) => void;
  /** the apps with state here */
  apps: () => Iterable<{ name: string; aggregator: Aggregator }>;
  /** the app's aggregator, its state created if need be; undefined for an app this hub does not know */
  open: (app: string) => Aggregator | undefined;
  /** makes the aggregators track exactly the keys `accept` says (Apps.setAccept) */
  setAccept: (accept: Accept) => void;
  /** ms the keys moving away are still counted before they are handed over */
  drainMs: number;
  /** ms after the change during which late reports of the moved keys are still handed over */
  followMs: number;
  /** the same for a leaving hub, which keeps its SDKs waiting for the 4010 close meanwhile */
  leaveMs: number;
  /** no SDK is connected to this hub (a leaving hub's last round is the one after they closed) */
  idle: () => boolean;
  counters: HandoffCounters;
  logger: Logger;
  /** wall clock (ms) the aggregators count in */
  wallNow: () => number;
  /** monotonic ms, for how long a chunk waited */
  monoNow: () => number;
  /** hub `from` had reached `epoch` when it sent a chunk here (ownership-fence.ts) @default ignored */
  heard?: (from: string, epoch: number) => void;
}

export class Handoff {
  readonly #o: HandoffOptions;
  #epoch: number;
  #members: Set<string>;
  #ownership: Ownership;
  /** members that left, and when (monoNow), kept HANDOFF_GRACE_MS */
  readonly #leftAt = new Map<string, number>();
  /** app \0 key -> the hub that handed it over at this epoch */
  readonly #claims = new Map<string, string>();
  /** keys each sender handed over at this epoch */
  readonly #received = new Map<string, number>();
  #pending: Waiting[] = [];
  /** the last change, while its moving keys drain */
  #due: Draining | undefined;
  readonly #settled: (() => void)[] = [];

  constructor(options: HandoffOptions, epoch: number, members: readonly Member[]) {
    this.#o = options;
    this.#epoch = epoch;
    this.#members = new Set(members.map((m) => m.id));
    this.#ownership = new Ownership(this.#members);
  }

  /**
   * The member list changed to `after` at `epoch`. `accept` says which keys are this hub's under
   * it, `before` under the list before (undefined: every key). The keys moving away are handed
   * over at once and forgotten here; reports of them that still arrive (sent before the SDKs
   * heard of the change, or, after a join, until their link to the joiner is up) are counted
   * afresh and handed over in further rounds every 2 × `drainMs` for `followMs`, or, when this hub
   * is leaving, for `leaveMs` or until its SDKs have closed their sockets, whichever comes first
   * (an SDK seeded with this hub's URL keeps reporting to it until the 4010 close). A round with
   * nothing counted sends nothing.
   */
  changed(epoch: number, after: readonly Member[], before: Accept, accept: Accept): void {
    const o = this.#o;
    this.#flushDue(true);
    this.#mark(epoch, after);
    this.#view(epoch, after);
    if (o.maxKeys <= 0 || after.length === 0) o.setAccept(accept);
    else {
      const union: Accept =
        before === undefined || accept === undefined ? undefined : (key) => accept(key) || before(key);
      const ownership = new Ownership(after.map((m) => m.id));
      const staying = after.some((m) => m.id === o.selfId);
      const until = o.monoNow() + (staying ? o.followMs : o.leaveMs);
      const own = (key: string) => ownership.owner(key) === o.selfId;
      this.#due = { epoch, ownership, own, accept, union, staying, until, timer: this.#timer(o.drainMs) };
      this.#round(this.#due);
    }
    // Chunks that came before this hub heard of the change merge only now, once the aggregators
    // track the keys it gave this hub: under the old ownership those keys are another hub's and
    // the merge would drop them. A leaving hub hands over right after telling Redis it left, so
    // its first chunk often overtakes the member list on its way to the heir.
    this.#drain();
  }

  /** Sends a marker at `epoch` to each hub of `after` that gains keys from this one (the class's design block). */
  #mark(epoch: number, after: readonly Member[]): void {
    const self = this.#o.selfId;
    const staying = after.some((m) => m.id === self);
    for (const { id } of after) {
      if (id === self || (staying && this.#members.has(id))) continue;
      this.#o.send(id, encodeMarker({ from: self, to: id, epoch }));
    }
  }

  /** Resolves once the last change's keys are handed over (at most `followMs` from now). */
  settled(): Promise<void> {
    if (this.#due === undefined) return Promise.resolve();
    return new Promise((resolve) => this.#settled.push(resolve));
  }

  /** Hands over what is draining now, at once (the hub is closing). */
  flush(): void {
    this.#flushDue(true);
  }

  #timer(ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      try {
        this.#flushDue(false);
      } catch (err) {
        this.#o.logger.error({ evt: 'internal_error', what: 'handoff', err }, 'handing windows over failed');
      }
    }, ms);
    timer.unref();
    return timer;
  }

  /** Hands the moving keys over and forgets them; late reports re-admit them (the union). */
  #round(due: Draining): void {
    try {
      this.#send(due.epoch, due.ownership);
    } finally {
      // forgotten without demotion: the new owner decides now
      this.#o.setAccept(due.own);
      this.#o.setAccept(due.union);
    }
  }

  /** The next round of the draining change; `last`, or its time up: the final one. */
  #flushDue(last: boolean): void {
    const due = this.#due;
    if (due !== undefined) {
      this.#due = undefined;
      clearTimeout(due.timer);
      try {
        this.#send(due.epoch, due.ownership);
      } finally {
        // `own` forgets what was sent (`accept` would not, for a leaving hub of two: a lone member accepts every key)
        this.#o.setAccept(due.own);
        const left = due.until - this.#o.monoNow();
        if (!last && left > 0 && (due.staying || !this.#o.idle())) {
          this.#o.setAccept(due.union);
          this.#due = { ...due, timer: this.#timer(Math.min(this.#o.drainMs * 2, left)) };
        } else this.#o.setAccept(due.accept);
      }
    }
    if (this.#due !== undefined) return;
    const waiters = this.#settled.splice(0);
    for (const resolve of waiters) resolve();
  }

  /** Sends the tracked keys `ownership` gives to another hub to their new owners, at `epoch`. */
  #send(epoch: number, ownership: Ownership): void {
    const o = this.#o;
    const self = o.selfId;
    const dest = (key: string): string | undefined => {
      const owner = ownership.owner(key);
      return owner === self ? undefined : owner;
    };
    const now = o.wallNow();
    let budget = o.maxKeys;
    for (const { name, aggregator } of o.apps()) {
      const { byOwner, dropped } = aggregator.exportWindows(dest, now, Math.max(0, budget));
      o.counters.keysDropped += dropped;
      for (const [to, entries] of byOwner) {
        budget -= entries.length;
        const chunks = encodeChunks({ from: self, to, epoch, app: name }, entries);
        for (const bytes of chunks) {
          o.counters.chunksSent++;
          o.counters.bytesSent += bytes.byteLength;
          o.send(to, bytes);
        }
        o.counters.keysSent += entries.length;
        o.logger.info(
          { evt: 'handoff_sent', app: name, to, epoch, keys: entries.length, chunks: chunks.length },
          'handed keys over to their new owner',
        );
      }
    }
  }

  /** Judges chunks at `epoch` and its member list from now on (the caller then drains those that waited for it). */
  #view(epoch: number, members: readonly Member[]): void {
    const mono = this.#o.monoNow();
    const ids = new Set(members.map((m) => m.id));
    for (const id of this.#members) if (!ids.has(id)) this.#leftAt.set(id, mono);
    for (const id of ids) this.#leftAt.delete(id);
    if (epoch !== this.#epoch) {
      this.#claims.clear();
      this.#received.clear();
    }
    this.#epoch = epoch;
    this.#members = ids;
    this.#ownership = new Ownership(ids);
  }

  /** A chunk from another hub. Never throws. */
  receive(bytes: Uint8Array): void {
    const o = this.#o;
    o.counters.chunksReceived++;
    let chunk: HandoffChunk;
    try {
      chunk = decodeChunk(bytes);
      if (chunk.to !== o.selfId) throw new ChunkError('malformed', `addressed to ${chunk.to}`);
    } catch (err) {
      const reason = err instanceof ChunkError ? err.reason : 'malformed';
      this.#refuse(reason, { bytes: bytes.byteLength }, (err as Error).message);
      return;
    }
    // sent once its sender had reached the epoch, whichever this hub has reached
    o.heard?.(chunk.from, chunk.epoch);
    if (chunk.app === '') return; // a marker: nothing to merge
    if (chunk.epoch > this.#epoch) {
      if (this.#pending.length >= HANDOFF_PENDING_MAX) {
        this.#refuse('backlog', chunk, `${HANDOFF_PENDING_MAX} chunks wait for their epoch already`);
        return;
      }
      this.#pending.push({ chunk, at: o.monoNow() });
      return;
    }
    this.#apply(chunk, 0);
  }

  /** Refuses chunks that waited too long for their epoch; forgets members gone for long. */
  tick(): void {
    const mono = this.#o.monoNow();
    for (const [id, at] of this.#leftAt) if (mono - at > HANDOFF_GRACE_MS) this.#leftAt.delete(id);
    if (this.#pending.length === 0) return;
    const keep: Waiting[] = [];
    for (const p of this.#pending) {
      if (mono - p.at > HANDOFF_GRACE_MS)
        this.#refuse('stale_epoch', p.chunk, `this hub never reached epoch ${p.chunk.epoch} (at ${this.#epoch})`);
      else keep.push(p);
    }
    this.#pending = keep;
  }

  /** chunks waiting for their epoch now */
  get pending(): number {
    return this.#pending.length;
  }

  #drain(): void {
    if (this.#pending.length === 0) return;
    const mono = this.#o.monoNow();
    const due = this.#pending.filter((p) => p.chunk.epoch <= this.#epoch);
    this.#pending = this.#pending.filter((p) => p.chunk.epoch > this.#epoch);
    for (const p of due) this.#apply(p.chunk, mono - p.at);
  }

  #apply(chunk: HandoffChunk, delayMs: number): void {
    const o = this.#o;
    const { from, epoch, app } = chunk;
    if (epoch < this.#epoch) {
      this.#refuse('stale_epoch', chunk, `epoch ${epoch} is older than this hub's ${this.#epoch}`);
      return;
    }
    const member = this.#members.has(from) || this.#leftAt.has(from);
    if (from === o.selfId || !member) {
      this.#refuse('not_member', chunk, `${from} is not a member`);
      return;
    }
    const had = this.#received.get(from) ?? 0;
    let fresh = 0;
    for (const entry of chunk.entries) if (!this.#claims.has(`${app}\u0000${entry.key}`)) fresh++;
    if (had + fresh > o.maxKeys) {
      this.#refuse('too_large', chunk, `${from} handed over more than ${o.maxKeys} keys at epoch ${epoch}`);
      return;
    }
    const aggregator = o.open(app);
    if (aggregator === undefined) {
      this.#refuse('unknown_app', chunk, `unknown app`);
      return;
    }
    this.#received.set(from, had + fresh);
    // the sender's rank among the members but this hub: it must have been the key's owner
    const others = new Ownership([...this.#members, from].filter((id) => id !== o.selfId));
    const now = o.wallNow();
    let notOwner = 0;
    let conflict = 0;
    let merged = 0;
    let promoted = 0;
    let counts = 0;
    for (const entry of chunk.entries) {
      if (this.#ownership.owner(entry.key) !== o.selfId || others.owner(entry.key) !== from) {
        notOwner++;
        continue;
      }
      // the same sender may hand a key over twice (the follow-up round), another hub never
      const claim = `${app}\u0000${entry.key}`;
      const claimant = this.#claims.get(claim);
      if (claimant !== undefined ? claimant !== from : this.#claims.size >= o.maxKeys * 4) {
        conflict++;
        continue;
      }
      this.#claims.set(claim, from);
      const result = aggregator.importWindow(entry, now, delayMs);
      if (result === 'untracked') continue;
      merged++;
      for (const c of entry.slices) counts += c;
      if (result === 'promoted') promoted++;
    }
    o.counters.keysReceived += merged;
    o.counters.keysPromoted += promoted;
    if (notOwner > 0) this.#refuse('not_owner', chunk, `${from} cannot have owned these keys`, notOwner);
    if (conflict > 0) this.#refuse('conflict', chunk, 'keys another hub handed over at this epoch', conflict);
    o.logger.info(
      { evt: 'handoff_received', from, epoch, app, keys: merged, counts, promoted, delayMs: Math.round(delayMs) },
      'merged windows handed over by another hub',
    );
  }

  #refuse(
    reason: HandoffRefusal,
    chunk: Partial<HandoffChunk> & { bytes?: number },
    detail: string,
    keys = chunk.entries?.length ?? 0,
  ): void {
    const perKey = reason === 'not_owner' || reason === 'conflict';
    this.#o.counters.refused[reason] += perKey ? keys : 1;
    this.#o.logger.warn(
      {
        evt: 'handoff_refused',
        reason,
        from: chunk.from,
        epoch: chunk.epoch,
        app: chunk.app,
        keys,
        ...(chunk.bytes === undefined ? {} : { bytes: chunk.bytes }),
        detail,
      },
      `handoff refused (${reason})`,
    );
  }
}
