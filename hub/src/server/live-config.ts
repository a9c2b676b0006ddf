/**
 * The parts of a running hub that a config reload changes (SIGHUP on the CLI, `hub.reload()` for
 * embedders): the admin and dashboard tokens, the apps with their tokens and rules (through the
 * coordinator), the TLS pair, and whatever else registered for the new config (notify targets).
 *
 * A reload validates everything before it changes anything: the file, then the certificate and key,
 * so a bad file leaves the hub exactly as it was (the error names the field, as at start-up).
 * Where a socket or process is bound at start (port, host, Redis URL, node id, tunables, plain vs
 * TLS, allowed origins) a reload keeps the old value; docs/operations/run-a-hub.md lists them.
 *
 * TLS: `tls.Server#setSecureContext` swaps the pair for the handshakes that follow; connections
 * already up keep the session they negotiated.
 */
import type { Server as HttpsServer } from 'node:https';
import { ErrorCode, ValidationError } from '@hotkey/sdk';
import type { Coordinator } from '../core/coordinator.ts';
import { loadHubConfig, parseHubConfig, type HubConfig } from './config.ts';
import type { Logger } from '../core/logger.ts';
import type { HubConfigInput, HubTlsOptions } from './options.ts';
import { loadTls, type TlsFiles } from './tls.ts';

/** Where a reload reads from; a config object wins over a path. */
export interface ReloadSource {
  /** the JSON config file to read again */
  configPath?: string;
  /** or a parsed config object, validated like the file */
  config?: HubConfigInput;
  /**
   * the certificate and key files to read again (the CLI's `--tls-cert`/`--tls-key`, which win
   * over the file's `tls`); without them the file's `tls` is read, and without that the pair stays
   */
  tlsFiles?: TlsFiles;
  /** what to call `tlsFiles` in errors @default { cert: 'tls.cert', key: 'tls.key' } */
  tlsNames?: TlsFiles;
}

/** What a reload changed, by config field (`apps`, `adminToken`, `tls`, `notify`, …). */
export interface ReloadResult {
  changed: string[];
}

export interface LiveConfigParts {
  coordinator: Coordinator;
  tls: boolean;
  /** the pair the server started with (PEM), so that a reload with the same files changes nothing */
  tlsPair?: HubTlsOptions | undefined;
  logger: Logger;
  /** the config the hub started with (undefined: open mode or options only) */
  config: HubConfig | undefined;
  /** tokens given as options (CLI flags): they win over the file's, before and after a reload */
  fixed: { adminToken?: string | undefined; dashboardToken?: string | undefined };
}

export class LiveConfig {
  readonly #parts: LiveConfigParts;
  /** the hub's server (an https.Server when `tls`), set once it exists */
  server: unknown;
  #config: HubConfig | undefined;
  #tlsPair: HubTlsOptions | undefined;
  readonly #listeners: ((config: HubConfig) => string[] | undefined)[] = [];
  #queue: Promise<unknown> = Promise.resolve();

  constructor(parts: LiveConfigParts) {
    this.#parts = parts;
    this.#config = parts.config;
    this.#tlsPair = parts.tlsPair;
  }

  get adminToken(): string | undefined {
    return this.#parts.fixed.adminToken ?? this.#config?.adminToken;
  }
  get dashboardToken(): string | undefined {
    return this.#parts.fixed.dashboardToken ?? this.#config?.dashboardToken;
  }
  /** the config in force (the last one applied) */
  get config(): HubConfig | undefined {
    return this.#config;
  }

  /** Called with each new config once it is applied; returns the fields it changed, for the log line. */
  onApply(listener: (config: HubConfig) => string[] | undefined): void {
    this.#listeners.push(listener);
  }

  /**
   * Reads and validates `source`, then applies it; one reload at a time (a second waits for the
   * first). Rejects with ValidationError (HK_ERR_CONFIG) naming the field, logged as
   * `config_refused`, and changes nothing; logs `config_reloaded` with the fields that changed.
   */
  reload(source: ReloadSource): Promise<ReloadResult> {
    const run = this.#queue.then(() => this.#reload(source));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #reload(source: ReloadSource): Promise<ReloadResult> {
    const { logger } = this.#parts;
    try {
      const config = await this.#read(source);
      const tls = await this.#readTls(source, config);
      const changed = this.#apply(config, tls);
      logger.info(
        { evt: 'config_reloaded', changed },
        `config reloaded${changed.length ? `: ${changed.join(', ')}` : ', nothing changed'}`,
      );
      return { changed };
    } catch (err) {
      const field = err instanceof ValidationError ? err.field : undefined;
      logger.error(
        { evt: 'config_refused', field, reason: (err as Error).message },
        'config reload refused, the running config stays',
      );
      throw err;
    }
  }

  /** The new config; without a source, the one in force (a reload of the TLS files alone, or nothing). */
  async #read(source: ReloadSource): Promise<HubConfig | undefined> {
    if (source.config !== undefined) return parseHubConfig(source.config);
    if (source.configPath !== undefined) return loadHubConfig(source.configPath);
    return this.#config;
  }

  async #readTls(source: ReloadSource, config: HubConfig | undefined): Promise<HubTlsOptions | undefined> {
    const files = source.tlsFiles ?? config?.tls;
    if (files === undefined) return undefined;
    const field = source.tlsFiles === undefined ? 'tls' : (source.tlsNames?.cert ?? 'tls.cert');
    if (!this.#parts.tls)
      throw new ValidationError(ErrorCode.Config, field, 'this hub serves plain HTTP: turning TLS on needs a restart');
    return loadTls(files, source.tlsFiles === undefined ? undefined : source.tlsNames);
  }

  #apply(config: HubConfig | undefined, tls: HubTlsOptions | undefined): string[] {
    const before = this.#config;
    const changed: string[] = [];
    if (tls !== undefined && !samePair(tls, this.#tlsPair)) {
      (this.server as HttpsServer).setSecureContext({ cert: tls.cert, key: tls.key });
      this.#tlsPair = tls;
      changed.push('tls');
    }
    if (config === undefined) return changed;
    const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
    if (!same(before?.apps, config.apps)) changed.push('apps');
    if (before?.adminToken !== config.adminToken) changed.push('adminToken');
    if (before?.dashboardToken !== config.dashboardToken) changed.push('dashboardToken');
    this.#config = config;
    this.#parts.coordinator.reconfigure?.(config.apps);
    if (!same(before?.allowedOrigins, config.allowedOrigins))
      this.#parts.logger.warn(
        { evt: 'config_restart_needed', field: 'allowedOrigins' },
        'allowedOrigins changed in the file: it takes effect at the next restart',
      );
    for (const listener of this.#listeners) changed.push(...(listener(config) ?? []));
    return changed;
  }
}

function samePair(a: HubTlsOptions, b: HubTlsOptions | undefined): boolean {
  const bytes = (v: string | Buffer) => (typeof v === 'string' ? Buffer.from(v) : v);
  return b !== undefined && bytes(a.cert).equals(bytes(b.cert)) && bytes(a.key).equals(bytes(b.key));
}
