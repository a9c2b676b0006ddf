/**
 * The app's config as the hubs send it (Welcome, Config): its rules, this instance's report
 * thresholds and the number of instances. Applying it re-targets the access window and the rate
 * limits; the rules are recompiled only when they changed, since every hub of the cluster sends
 * the same ones.
 */
import type { AccessWindow } from '../../counting/window.ts';
import { localThreshold, RuleSet, type Rule } from '../../rules.ts';
import type { RateLimits } from './rate-limits.ts';

export class AppConfig {
  readonly #window: AccessWindow;
  readonly #limits: RateLimits;
  /** the rules compiled for matching (the default rule until a hub sends some) */
  rules = new RuleSet([]);
  #rulesJson = '';
  /** SDK instances of the app the hub last reported */
  instances = 0;

  constructor(window: AccessWindow, limits: RateLimits) {
    this.#window = window;
    this.#limits = limits;
  }

  /** The key's rule, or undefined when none matches it. */
  ruleFor(key: string): Rule | undefined {
    return this.rules.ruleFor(key);
  }

  apply(rules: Rule[], local: number[], instances: number): void {
    this.instances = instances;
    const json = JSON.stringify(rules);
    if (json !== this.#rulesJson) {
      this.#rulesJson = json;
      this.rules = new RuleSet(rules);
      this.#window.setRules(this.rules);
    }
    // The hub's threshold counts accesses within the rule's window; ours is one fixed window.
    const windowMs = this.#window.sliceMs * this.#window.slices;
    const thresholds = this.rules.rules.map((rule, i) => {
      // no threshold from the hub: this instance alone, as the hub would compute it
      const hubLocal = local[i] ?? localThreshold(rule, 1);
      return Math.max(1, Math.ceil((hubLocal * windowMs) / rule.windowMs));
    });
    this.#window.setThresholds(thresholds);
    this.#limits.configure(this.rules, instances);
  }
}
