/**
 * The events this hub has seen (its own and, in a cluster, every other hub's), the newest `keep`
 * of them: what the API's event list and the dashboard's first page show.
 */
import type { HubEvent } from '../coordinator.ts';

export class RecentEvents {
  readonly #keep: number;
  #events: HubEvent[] = [];

  constructor(keep: number) {
    this.#keep = keep;
  }

  push(event: HubEvent): void {
    this.#events.push(event);
    // cut back to `keep` once twice as many: one copy per `keep` events, not one per event
    if (this.#events.length > this.#keep * 2) this.#events = this.#events.slice(-this.#keep);
  }

  /** the newest `keep` events at or after `at`, oldest first */
  since(at: number): HubEvent[] {
    return this.#events.filter((e) => e.at >= at).slice(-this.#keep);
  }
}
