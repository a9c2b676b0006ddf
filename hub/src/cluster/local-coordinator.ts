/**
 * The coordinator of a hub running alone on embedded defaults: the only member is this hub, apps
 * and tokens come from the config file (or every app is accepted in open mode), rules change in
 * memory, history is a bounded ring buffer and events are delivered to local listeners.
 */
import type { Member } from '@hotkey/sdk/protocol';
import { ErrorCode, HotKeyError } from '@hotkey/sdk';
import { parseRules, type Rule } from '@hotkey/sdk/rules';
import type { AppAuth, AppSeed, Coordinator, Health, HubEvent, HubStatus } from '../core/coordinator.ts';
import { isValidAppName, type AppConfig } from '../core/apps.ts';
import { DEFAULT_TUNABLES } from '../core/tunables.ts';

export interface LocalCoordinatorOptions {
  /** this hub's id */
  selfId: string;
  /** apps, tokens and rules; undefined runs open (any app, no token, default rule) */
  config?: { apps: Record<string, AppConfig> };
  /** events kept for `history` @default 10000 */
  historySize?: number;
  /** apps whose rules may be set in open mode @default 1000 */
  maxApps?: number;
}

/** Fixed-capacity FIFO: the oldest entry is overwritten once full. */
class Ring<T> {
  readonly #items: (T | undefined)[];
  #next = 0;
  #size = 0;
  constructor(capacity: number) {
    this.#items = new Array(Math.max(1, capacity));
  }
  push(item: T): void {
    this.#items[this.#next] = item;
    this.#next = (this.#next + 1) % this.#items.length;
    if (this.#size < this.#items.length) this.#size++;
  }
  /** oldest first */
  toArray(): T[] {
    const out: T[] = [];
    const start = (this.#next - this.#size + this.#items.length) % this.#items.length;
    for (let i = 0; i < this.#size; i++) out.push(this.#items[(start + i) % this.#items.length]!);
    return out;
  }
}

export class LocalCoordinator implements Coordinator {
  readonly selfId: string;
  readonly standalone = true;
  readonly open: boolean;
  /** the config file's apps (replaced by `reconfigure`); undefined in open mode */
  #apps: Readonly<Record<string, AppSeed>> | undefined;
  readonly #rules = new Map<string, Rule[]>();
  readonly #maxApps: number;
  readonly #history: Ring<HubEvent>;
  #self: Member;
  #status: HubStatus | undefined;
  readonly #memberListeners: ((epoch: number, members: Member[]) => void)[] = [];
  readonly #ruleListeners: ((app: string, rules: Rule[]) => void)[] = [];
  readonly #eventListeners: ((event: HubEvent) => void)[] = [];

  constructor(options: LocalCoordinatorOptions) {
    this.selfId = options.selfId;
    this.#apps = options.config?.apps;
    this.open = options.config === undefined;
    this.#maxApps = options.maxApps ?? DEFAULT_TUNABLES.maxApps;
    this.#history = new Ring(options.historySize ?? 10_000);
    this.#self = { id: options.selfId, url: '' };
    for (const [app, cfg] of Object.entries(options.config?.apps ?? {})) this.#rules.set(app, cfg.rules);
  }

  async start(self: Member): Promise<void> {
    this.#self = { ...self };
    for (const l of this.#memberListeners) l(1, [this.#self]);
  }
  async leave(): Promise<void> {}
  async close(): Promise<void> {}

  members(): { epoch: number; members: Member[] } {
    return { epoch: 1, members: [{ ...this.#self }] };
  }
  onMembers(listener: (epoch: number, members: Member[]) => void): void {
    this.#memberListeners.push(listener);
  }

  app(app: string): AppAuth | undefined {
    if (this.open) return isValidAppName(app) ? {} : undefined;
    const cfg = this.#apps?.[app];
    if (cfg === undefined) return undefined;
    return cfg.token === undefined ? {} : { token: cfg.token };
  }
  apps(): string[] {
    return [...this.#rules.keys()].sort();
  }
  rules(app: string): Rule[] {
    return this.#rules.get(app) ?? [];
  }
  /**
   * Tokens and the app list take effect at the next Hello; an app whose rules in the file changed
   * gets them (rules set through the API since stay otherwise); apps gone from the file are unknown
   * to new connections. Ignored in open mode.
   */
  reconfigure(apps: Readonly<Record<string, AppSeed>>): void {
    if (this.open) return;
    const before = this.#apps ?? {};
    this.#apps = apps;
    for (const app of [...this.#rules.keys()]) if (!Object.hasOwn(apps, app)) this.#rules.delete(app);
    for (const [app, cfg] of Object.entries(apps)) {
      const rules = [...(cfg.rules ?? [])];
      const old = before[app];
      if (old !== undefined && JSON.stringify(old.rules ?? []) === JSON.stringify(rules)) continue;
      this.#rules.set(app, rules);
      for (const l of this.#ruleListeners) l(app, rules.slice());
    }
  }

  async setRules(app: string, rules: unknown): Promise<Rule[]> {
    if (this.app(app) === undefined) throw new HotKeyError(ErrorCode.UnknownApp, `unknown app "${app}"`);
    const parsed = parseRules(rules);
    if (!this.#rules.has(app) && this.#rules.size >= this.#maxApps) {
      throw new HotKeyError(ErrorCode.Config, `rules are kept for at most ${this.#maxApps} apps`);
    }
    this.#rules.set(app, parsed);
    for (const l of this.#ruleListeners) l(app, parsed);
    return parsed;
  }
  onRules(listener: (app: string, rules: Rule[]) => void): void {
    this.#ruleListeners.push(listener);
  }

  publishEvent(event: HubEvent): void {
    this.#history.push(event);
    for (const l of this.#eventListeners) {
      try {
        l(event);
      } catch {
        // a listener's fault must not stop the others (publishEvent never throws)
      }
    }
  }
  onEvent(listener: (event: HubEvent) => void): void {
    this.#eventListeners.push(listener);
  }
  async history(app: string | undefined, since: number, limit: number): Promise<HubEvent[]> {
    const out: HubEvent[] = [];
    for (const e of this.#history.toArray()) {
      if (e.at < since || (app !== undefined && e.app !== app)) continue;
      out.push(e);
    }
    return out.slice(0, Math.max(0, limit));
  }

  publishStatus(status: HubStatus): void {
    this.#status = status;
  }
  statuses(): HubStatus[] {
    return this.#status === undefined ? [] : [this.#status];
  }

  health(): Health {
    return { state: 'ok', detail: this.open ? 'single hub, open mode' : 'single hub' };
  }
}
