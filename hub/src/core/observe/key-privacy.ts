/**
 * How a key is shown outside the hub's core: the one mapping every human-facing output (API
 * listings, events and history, the dashboard feed and its CSV, log lines, webhooks) goes through.
 * The SDKs' wire protocol is untouched: they send and receive the real key.
 *
 * Per app, `keys` is
 * - `plain` (default): the key as it is;
 * - `hash`: the longest configured `keepPrefix` the key starts with, then `h:` and the first 16
 *   hex digits (64 bits) of HMAC-SHA256(secret, app NUL key) (RFC 2104). Keyed, so that nobody
 *   without the deployment's secret can confirm a guessed key (an unkeyed hash of an e-mail address
 *   is a lookup table away from the address); stable, so that a key keeps one name across hubs,
 *   restarts and the Redis history;
 * - `redact`: the prefix and a fixed marker; rows of one prefix look alike on purpose.
 */
import { createHmac } from 'node:crypto';
import type { HubEvent } from '../coordinator.ts';

export const KEY_MODES = ['plain', 'hash', 'redact'] as const;
export type KeyMode = (typeof KEY_MODES)[number];

/** An app's key privacy as the config declares it. */
export interface KeyPrivacySettings {
  /** @default 'plain' */
  keys?: KeyMode;
  /** prefixes kept in clear in front of the hash or marker (the longest match wins) @default [] */
  keepPrefix?: readonly string[];
}

/** what follows the kept prefix of a hashed key */
export const HASH_MARK = 'h:';
/** hex digits of the HMAC kept: 64 bits, collisions unlikely below billions of keys per app */
export const HASH_HEX_DIGITS = 16;
/** what follows the kept prefix of a redacted key */
export const REDACTED_MARK = '<redacted>';
/** shown names remembered per hub (hashing is cheap but the feed asks for every hot row every round) */
const MAX_CACHED = 10_000;

interface AppPolicy {
  mode: KeyMode;
  prefixes: readonly string[];
}

export class KeyPrivacy {
  #secret: string | undefined;
  #apps = new Map<string, AppPolicy>();
  #cache = new Map<string, string>();

  /** Throws TypeError when an app hashes and there is no secret (the config layer checks it first, naming the field). */
  constructor(secret?: string, apps?: Readonly<Record<string, KeyPrivacySettings>>) {
    this.configure(secret, apps ?? {});
  }

  /** Replaces the secret and the apps' settings (a config reload); nothing changes if it throws. */
  configure(secret: string | undefined, apps: Readonly<Record<string, KeyPrivacySettings>>): void {
    const next = new Map<string, AppPolicy>();
    for (const [app, s] of Object.entries(apps)) {
      const mode = s.keys ?? 'plain';
      if (mode === 'plain') continue;
      if (mode === 'hash' && (secret === undefined || secret === ''))
        throw new TypeError(`app "${app}" hashes its keys: a key secret is required`);
      // longest first: `session:admin:` wins over `session:`
      next.set(app, { mode, prefixes: [...(s.keepPrefix ?? [])].sort((a, b) => b.length - a.length) });
    }
    this.#secret = secret;
    this.#apps = next;
    this.#cache.clear();
  }

  mode(app: string): KeyMode {
    return this.#apps.get(app)?.mode ?? 'plain';
  }

  /** The key as humans and storage may see it. */
  show(app: string, key: string): string {
    const policy = this.#apps.get(app);
    if (policy === undefined) return key;
    const id = `${app}\u0000${key}`;
    let shown = this.#cache.get(id);
    if (shown !== undefined) return shown;
    const prefix = policy.prefixes.find((p) => key.startsWith(p)) ?? '';
    shown =
      policy.mode === 'redact'
        ? prefix + REDACTED_MARK
        : prefix +
          HASH_MARK +
          createHmac('sha256', this.#secret as string)
            .update(id)
            .digest('hex')
            .slice(0, HASH_HEX_DIGITS);
    if (this.#cache.size >= MAX_CACHED) this.#cache.clear();
    this.#cache.set(id, shown);
    return shown;
  }

  /** The event with its key as shown (the same object when the app is plain). */
  event(e: HubEvent): HubEvent {
    return this.#apps.has(e.app) ? { ...e, key: this.show(e.app, e.key) } : e;
  }
}
