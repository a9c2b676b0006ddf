/**
 * The write-hot modes, switched by promotions, whatever the client: while a key is hot by writes
 * (its rule's kind 'write' or 'any') and its rule asks for it,
 * - `shards: N` — INCR / INCRBY / DECR / DECRBY go to one of N shard keys (counters.ts) and GET
 *   returns base + Σ shards; the demotion folds the shards back into the key (exactly once);
 * - `coalesce: true` — INCR / INCRBY are merged per instance for `coalesceMs` into one INCRBY
 *   (coalescer.ts).
 * An adapter hands `route` the commands its client sends on their own (in a pipeline or MULTI
 * they go to the key as they are: still correct, GET sums the key and its shards), and gives the
 * core an `OwnSend` (scripts.ts) for the commands routing sends itself. Shard names are computed
 * from the full Redis key: an adapter routes only commands whose arguments are full keys. It
 * hears promotions, demotions and hk's close as a member of its wrap (wrap-events.ts).
 *
 * While sharded, an INCR-family command replies with the new value of the shard it landed on,
 * not the key's total: read the total with GET, and use `counter(…).take(n)` for decrements that
 * must not go below zero.
 */
import type { HotKeyClient, PromoteInfo } from '../../client/client.ts';
import { RuleSet, WRITE_DEFAULTS, type Rule } from '../../rules.ts';
import { Coalescer } from './coalescer.ts';
import { ShardedCounter } from './counters.ts';
import { keyName } from '../identity.ts';
import type { OwnSend } from './scripts.ts';
import { sameSlotName } from '../hash-slots.ts';

/** The Command fields routing needs. */
export interface RoutedCommand {
  name: string;
  args: unknown[];
  promise: Promise<unknown>;
  resolve: (value: unknown) => unknown;
  reject: (error: Error) => void;
}

interface ShardedKey {
  counter: ShardedCounter;
  /** shard writes of this instance still in flight: the fold waits for them */
  inflight: Set<Promise<unknown>>;
}

export interface WriteHotStats {
  /** keys sharded on this instance now */
  sharded: number;
  /** increments sent to shards */
  shardedWrites: number;
  /** GETs answered by summing shards */
  shardedReads: number;
  folds: number;
  /** folds that failed (the units stay in shards; the next fold of the key moves them) */
  foldErrors: number;
  coalescedIncrements: number;
  coalescedFlushes: number;
  coalescedFailures: number;
}

const INCRS: Readonly<Record<string, 1 | -1>> = { incr: 1, incrby: 1, decr: -1, decrby: -1 };

export class WriteHot {
  readonly #hk: HotKeyClient;
  readonly #send: OwnSend;
  readonly #sharded = new Map<string, ShardedKey>();
  readonly #coalescer: Coalescer;
  #rules: readonly Rule[] | undefined;
  #set = new RuleSet([]);
  /** some rule asks for shards or coalescing: commands are looked at */
  #wanted = false;
  #shardedWrites = 0;
  #shardedReads = 0;
  #folds = 0;
  #foldErrors = 0;

  /**
   * `send`: the adapter's own commands to a key's node, past its hook; `invalidate`: a merged
   * write's invalidation (the adapter's, as for any write of the key).
   */
  constructor(hk: HotKeyClient, send: OwnSend, invalidate: (key: string) => Promise<unknown>) {
    this.#send = send;
    this.#hk = hk;
    this.#coalescer = new Coalescer({
      send: (key, sum) => send(key, ['INCRBY', key, sum]).then(Number),
      onLanded: invalidate,
    });
  }

  /** Readers switch at the promotion too, so that their GETs sum the shards from the first write on. */
  promoted(key: string, info: PromoteInfo): void {
    if (info.kind === 'read' || !this.active) return;
    const shards = this.#set.ruleFor(key)?.shards;
    if (shards !== undefined && sameSlotName(key, '') !== undefined) this.#shard(key, shards);
  }

  demoted(key: string): void {
    this.#unshard(key);
  }

  /**
   * The HotKeyClient closed: merged increments go out now, and this instance's shards fold back
   * (a fold is safe while others still write shards; it spares the key a wait for the next demotion).
   */
  hkClosed(): void {
    void this.flush();
    for (const key of [...this.#sharded.keys()]) this.#unshard(key);
  }

  /** Whether any command may be routed: a rule asks for shards or coalescing. One compare when none does. */
  get active(): boolean {
    const rules = this.#hk.rules();
    if (rules !== this.#rules) this.#refresh(rules);
    return this.#wanted;
  }

  /** Whether GET of `key` must sum shards (the GET fast path checks this for hot keys). */
  owns(key: string): boolean {
    return this.#sharded.size > 0 && this.#sharded.has(key);
  }

  /** Sends every merged increment now (before QUIT, or on demand). */
  flush(): Promise<void> {
    return this.#coalescer.flush();
  }

  stats(): WriteHotStats {
    const c = this.#coalescer.stats;
    return {
      sharded: this.#sharded.size,
      shardedWrites: this.#shardedWrites,
      shardedReads: this.#shardedReads,
      folds: this.#folds,
      foldErrors: this.#foldErrors,
      coalescedIncrements: c.increments,
      coalescedFlushes: c.flushes,
      coalescedFailures: c.failures,
    };
  }

  /**
   * Routes `command` (`name`: its lower-case name) when a write-hot mode applies to it: settles
   * it and returns its promise; undefined: the adapter goes on as usual.
   */
  route(command: RoutedCommand, name: string): Promise<unknown> | undefined {
    const sign = INCRS[name];
    if (sign === undefined && name !== 'get') return undefined;
    const arity = name === 'incrby' || name === 'decrby' ? 2 : 1;
    if (command.args.length !== arity) return undefined;
    const key = keyName(command.args[0]);
    if (key === undefined) return undefined;
    if (name === 'get') return this.#sharded.has(key) ? this.#sumRead(key, command) : undefined;
    const delta = arity === 2 ? Number(command.args[1]) * sign! : sign!;
    if (!Number.isSafeInteger(delta)) return undefined; // Redis says what is wrong with it
    const rule = this.#hotRule(key);
    if (rule === undefined) return undefined;
    this.#hk.track(key, 'write');
    if (rule.shards !== undefined) return this.#shardedWrite(key, rule.shards, delta, command);
    if (rule.coalesce === true && sign === 1)
      return settle(command, this.#coalescer.add(key, delta, rule.coalesceMs ?? WRITE_DEFAULTS.coalesceMs));
    return undefined;
  }

  /** The key's rule when it is hot by writes here and asks for shards or coalescing. */
  #hotRule(key: string): Rule | undefined {
    const kind = this.#hk.hotKind(key);
    if (kind !== 'write' && kind !== 'any') {
      if (this.#sharded.has(key)) this.#unshard(key); // expired without a demote we heard
      return undefined;
    }
    const rule = this.#set.ruleFor(key);
    // a key with a brace but no hash tag has no slot its shards' bookkeeping could share
    const shardable = rule?.shards !== undefined && sameSlotName(key, '') !== undefined;
    if (!shardable && rule?.coalesce !== true) {
      if (this.#sharded.has(key)) this.#unshard(key); // the rule changed
      return undefined;
    }
    return rule;
  }

  #shard(key: string, shards: number): ShardedKey {
    let state = this.#sharded.get(key);
    if (state === undefined || state.counter.shards.length !== shards) {
      if (state !== undefined) this.#unshard(key);
      state = { counter: new ShardedCounter(this.#send, key, { shards }), inflight: new Set() };
      this.#sharded.set(key, state);
      this.#hk.dropLocal(key); // a value cached before the switch would never see the shards
    }
    return state;
  }

  #shardedWrite(key: string, shards: number, delta: number, command: RoutedCommand): Promise<unknown> {
    const state = this.#shard(key, shards);
    this.#shardedWrites++;
    const write = state.counter.add(delta);
    const inflight = state.inflight;
    inflight.add(write);
    const done = () => inflight.delete(write);
    write.then(done, done);
    return settle(command, write);
  }

  #sumRead(key: string, command: RoutedCommand): Promise<unknown> {
    this.#shardedReads++;
    const counter = this.#sharded.get(key)!.counter;
    return settle(
      command,
      counter.total().then((sum) => String(sum)),
    );
  }

  /** Back to the plain key: once this instance's shard writes landed, fold the shards in. */
  #unshard(key: string): void {
    const state = this.#sharded.get(key);
    if (state === undefined) return;
    this.#sharded.delete(key);
    this.#folds++;
    void Promise.allSettled([...state.inflight])
      .then(() => state.counter.fold())
      .catch(() => {
        this.#foldErrors++;
      });
  }

  #refresh(rules: readonly Rule[]): void {
    this.#rules = rules;
    this.#set = new RuleSet(rules);
    this.#wanted = rules.some((r) => r.shards !== undefined || r.coalesce === true);
  }
}

/** Settles an adapter's command from a promise of ours (its promise and callback styles alike). */
function settle(command: RoutedCommand, result: Promise<unknown>): Promise<unknown> {
  result.then(
    (value) => command.resolve(value),
    (err: unknown) => command.reject(err instanceof Error ? err : new Error(String(err))),
  );
  return command.promise;
}
