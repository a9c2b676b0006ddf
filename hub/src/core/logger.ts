/**
 * What the core logs to: pino's calling convention, every event as fields
 * (`logger.info({ evt: 'promote', app, key, qps }, 'key promoted')`). The pino adapter that
 * writes it is server/logger.ts; the core knows only this interface.
 */
export interface Logger {
  error(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}
