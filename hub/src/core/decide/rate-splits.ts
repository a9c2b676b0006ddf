/**
 * Per-key rate limits, the hub's half: divides each limited key's cluster-wide `limit` (a rule
 * field, accesses per second) among the SDK sessions that report the key, and says what changed.
 *
 * Instances with a limit rule report every access of a matching key (their local threshold is 1:
 * rules.ts localThreshold), so the owner hub of a key sees each instance's demand. Every PERIOD_MS
 * the demand of each (key, session) becomes a rate (an EWMA over periods), and the limit is split
 * by max-min fairness (water-filling): an instance that uses less than an equal part gets what it
 * uses plus HEADROOM, the rest share what is left equally, and what nobody needs is spread evenly —
 * the shares always sum to the limit, so the cluster admits the limit when demand exceeds it,
 * however unevenly it is spread. Sessions that close or stop reporting leave the split at the next
 * period. A share is sent when it moved by more than RESEND_CHANGE or is a third of SHARE_TTL_MS
 * old; an SDK whose share lapses falls back to `limit / instances`.
 *
 * Bounded: at most `maxKeys` limited keys per app (a new key past it is refused and counted; keys
 * nobody reported for IDLE_MS leave), and per key the app's sessions.
 */
import { RuleSet, type Rule } from '@hotkey/sdk/rules';

/** shares are recomputed this often */
export const PERIOD_MS = 200;
/** an SDK keeps a share this long without renewal */
export const SHARE_TTL_MS = 3000;
/** a (key, session) no report named for this long leaves the split */
export const IDLE_MS = 1000;
/** weight of the newest period in a demand's EWMA */
const ALPHA = 0.5;
/** an instance under its equal part gets what it uses times this, so it can grow */
const HEADROOM = 1.05;
/** a share moving by more than this share of itself is sent at once */
const RESEND_CHANGE = 0.02;
/** limited keys per app tracked at most @default */
export const MAX_LIMITED_KEYS = 10_000;

/** What a share's receiver must be: compared by identity, `closed` once gone. */
export interface ShareHolder {
  readonly closed: boolean;
}

interface Use {
  /** accesses reported since the last period */
  count: number;
  /** accesses per second, EWMA over periods */
  rate: number;
  seenAt: number;
  /** the share last sent, and when */
  sent: number;
  sentAt: number;
}
interface LimitedKey {
  limit: number;
  uses: Map<ShareHolder, Use>;
}

export class RateSplits<S extends ShareHolder> {
  /** new limited keys refused because `maxKeys` were tracked */
  refused = 0;
  readonly #maxKeys: number;
  #rules: RuleSet | undefined;
  readonly #keys = new Map<string, LimitedKey>();
  #lastPeriod = Number.NEGATIVE_INFINITY;

  constructor(rules: readonly Rule[], maxKeys = MAX_LIMITED_KEYS) {
    this.#maxKeys = maxKeys;
    this.setRules(rules);
  }

  /** Whether any rule limits keys (report ingest skips this module otherwise). */
  get active(): boolean {
    return this.#rules !== undefined;
  }

  get size(): number {
    return this.#keys.size;
  }

  setRules(rules: readonly Rule[]): void {
    this.#rules = rules.some((r) => r.limit !== undefined) ? new RuleSet(rules) : undefined;
    this.#keys.clear(); // limits may have changed: demand is measured again from the next reports
  }

  /** Records `counts[i]` accesses of `keys[i]` by `session`, i in [from, to). */
  observe(session: S, keys: readonly string[], counts: readonly number[], from: number, to: number, now: number): void {
    const rules = this.#rules;
    if (rules === undefined) return;
    for (let i = from; i < to; i++) {
      const key = keys[i]!;
      let entry = this.#keys.get(key);
      if (entry === undefined) {
        const limit = rules.ruleFor(key)?.limit;
        if (limit === undefined) continue;
        if (this.#keys.size >= this.#maxKeys) {
          this.refused++;
          continue;
        }
        entry = { limit, uses: new Map() };
        this.#keys.set(key, entry);
      }
      let use = entry.uses.get(session);
      if (use === undefined) {
        use = { count: 0, rate: -1, seenAt: now, sent: -1, sentAt: Number.NEGATIVE_INFINITY };
        entry.uses.set(session, use);
      }
      use.count += counts[i]!;
      use.seenAt = now;
    }
  }

  /**
   * Every PERIOD_MS: recomputes the splits and calls `send` once per session with the shares it
   * should hear now (changed, or due for renewal).
   */
  tick(now: number, send: (session: S, keys: string[], rates: number[]) => void): void {
    if (this.#rules === undefined) return;
    if (this.#lastPeriod === Number.NEGATIVE_INFINITY) this.#lastPeriod = now; // the first period starts now
    if (now - this.#lastPeriod < PERIOD_MS) return;
    const elapsed = Math.min(now - this.#lastPeriod, 5 * PERIOD_MS);
    this.#lastPeriod = now;
    const out = new Map<S, { keys: string[]; rates: number[] }>();
    for (const [key, entry] of this.#keys) {
      for (const [session, use] of entry.uses) {
        if (session.closed || now - use.seenAt > IDLE_MS) {
          entry.uses.delete(session);
          continue;
        }
        const measured = (use.count * 1000) / elapsed;
        use.rate = use.rate < 0 ? measured : ALPHA * measured + (1 - ALPHA) * use.rate;
        use.count = 0;
      }
      if (entry.uses.size === 0) {
        this.#keys.delete(key);
        continue;
      }
      const shares = waterFill(
        entry.limit,
        [...entry.uses.values()].map((u) => u.rate),
      );
      let i = 0;
      for (const [session, use] of entry.uses) {
        const share = shares[i++]!;
        const moved = Math.abs(share - use.sent) > RESEND_CHANGE * Math.max(use.sent, 1e-9);
        if (!moved && now - use.sentAt < SHARE_TTL_MS / 3) continue;
        use.sent = share;
        use.sentAt = now;
        let batch = out.get(session as S);
        if (batch === undefined) out.set(session as S, (batch = { keys: [], rates: [] }));
        batch.keys.push(key);
        batch.rates.push(share);
      }
    }
    for (const [session, batch] of out) send(session, batch.keys, batch.rates);
  }
}

/**
 * Max-min fair split of `limit` by `demands` (per second): ascending, an instance under the equal
 * part of what is left gets its demand × HEADROOM, the others the equal part; a remainder nobody
 * needs is spread evenly. The shares sum to `limit`.
 */
export function waterFill(limit: number, demands: readonly number[]): number[] {
  const n = demands.length;
  const order = demands.map((_, i) => i).sort((a, b) => demands[a]! - demands[b]!);
  const shares = new Array<number>(n).fill(0);
  let left = limit;
  for (let k = 0; k < n; k++) {
    const i = order[k]!;
    const level = left / (n - k);
    const want = demands[i]! * HEADROOM;
    if (want < level) {
      shares[i] = want;
      left -= want;
    } else {
      for (let j = k; j < n; j++) shares[order[j]!] = level;
      left = 0;
      break;
    }
  }
  if (left > 0) for (let i = 0; i < n; i++) shares[i]! += left / n;
  return shares;
}
