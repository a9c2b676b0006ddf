/**
 * Key ownership by rendezvous (highest-random-weight) hashing: the owner of a key is the live hub
 * whose `score(hubId, key)` is highest. Every SDK and hub computes the same owner from the same
 * member list, and losing a hub moves only the keys it owned (each to its runner-up).
 * Reference: Thaler & Ravishankar, "Using name-based mappings to increase hit rates" (1998).
 */
import { hashString, mix32 } from './hash.ts';

export class Ownership {
  readonly ids: readonly string[];
  readonly #seeds: Uint32Array;

  /** @param ids live hub ids; order does not matter, duplicates are ignored */
  constructor(ids: Iterable<string>) {
    this.ids = [...new Set(ids)].sort();
    this.#seeds = Uint32Array.from(this.ids, (id) => hashString(id));
  }

  /** The owner's id, or undefined when there are no members. */
  owner(key: string): string | undefined {
    const n = this.ids.length;
    if (n <= 1) return this.ids[0];
    const keyHash = hashString(key);
    let best = 0;
    let bestScore = -1;
    for (let i = 0; i < n; i++) {
      const score = mix32(keyHash ^ this.#seeds[i]!);
      if (score > bestScore) {
        bestScore = score;
        best = i;
      }
    }
    return this.ids[best];
  }
}
