/**
 * What the core logs to: pino's calling convention, every event as fields
 * (`logger.info({ evt: 'promote', app, key, qps }, 'key promoted')`). The pino adapter that
 * writes it is server/logger.ts; the core knows only this interface, and the pino-free helpers
 * below (levels, a silent logger, a logger over a plain line sink) serve every folder.
 */
export interface Logger {
  error(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

/** Drops everything. */
export const silentLogger: Logger = Object.freeze({ error() {}, warn() {}, info() {}, debug() {} });

/** Warnings and errors as `[hotkey-hub] …` lines through console.warn: the default of parts built without a logger. */
export const consoleWarnings: Logger = loggerFromFunction((message) => console.warn(`[hotkey-hub] ${message}`));

/**
 * A Logger over a plain `(message) => void` sink: each event at `level` or more severe becomes
 * one line, its message followed by its fields as `name=value`.
 */
export function loggerFromFunction(log: (message: string) => void, level: LogLevel = 'warn'): Logger {
  const rank = LOG_LEVELS.indexOf(level);
  const at = (l: LogLevel) => (obj: object, msg?: string) => {
    if (LOG_LEVELS.indexOf(l) <= rank) log(formatFields(msg, obj));
  };
  return { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') };
}

/** `msg name=value …`: strings bare when they need no quotes, errors as their stack, the rest as JSON */
export function formatFields(msg: string | undefined, obj: object): string {
  const parts: string[] = msg === undefined || msg === '' ? [] : [msg];
  for (const [name, value] of Object.entries(obj)) {
    if (value === undefined) continue;
    if (value instanceof Error) parts.push(`${name}=${JSON.stringify(value.stack ?? value.message)}`);
    else if (typeof value === 'string')
      parts.push(`${name}=${/^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)}`);
    else parts.push(`${name}=${JSON.stringify(value)}`);
  }
  return parts.join(' ');
}
