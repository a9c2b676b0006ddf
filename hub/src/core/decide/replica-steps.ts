/**
 * Replica counts of an app's hot keys (a rule's `replicas`, for keys not cached locally): how many
 * copies of each serve reads, as last broadcast. A promotion starts at `replicaCount(rule, qps)`;
 * as the key's QPS moves, a count that grows is broadcast at once and one that shrinks only once
 * the QPS is DOWN_MARGIN below the step (hysteresis: a key hovering at a step is not re-promoted
 * every second). Bounded by the app's hot set: a demoted key leaves.
 */
import { replicaCount, type Rule } from '@hotkey/sdk/rules';

/** a count steps down once `replicaCount(rule, qps × DOWN_MARGIN)` is below it */
const DOWN_MARGIN = 1.25;

export class ReplicaSteps {
  readonly #counts = new Map<string, number>();

  /** A promotion: the count to broadcast with it (1: none). */
  start(key: string, rule: Rule, qps: number): number {
    const n = replicaCount(rule, qps);
    if (n > 1) this.#counts.set(key, n);
    else this.#counts.delete(key);
    return n;
  }

  /** The count last broadcast for a hot key (1: none). */
  count(key: string): number {
    return this.#counts.get(key) ?? 1;
  }

  /** The key's QPS now: the new count when it crossed a step, else undefined. */
  update(key: string, rule: Rule, qps: number): number | undefined {
    const current = this.count(key);
    const up = replicaCount(rule, qps);
    let next = current;
    if (up > current) next = up;
    else {
      const down = replicaCount(rule, qps * DOWN_MARGIN);
      if (down < current) next = down;
    }
    if (next === current) return undefined;
    if (next > 1) this.#counts.set(key, next);
    else this.#counts.delete(key);
    return next;
  }

  forget(key: string): void {
    this.#counts.delete(key);
  }
}
