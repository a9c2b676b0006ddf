/**
 * The hub's one logger: the pino adapter (the only module that imports pino). Every part of the
 * hub gets the same `Logger` and logs events as fields, not prose:
 *
 *   logger.info({ evt: 'promote', app: 'shop', key: 'item:42', qps: 1234 }, 'promoted')
 *
 * JSON lines by default (one object a line, pino's `level`/`time`/`msg` fields plus `evt` and the
 * event's fields); `pretty` writes one human line per event instead (a TTY, or `--log-pretty`).
 * The interface is pino's calling convention, so an embedder may pass a pino logger of their own.
 */
import { pino, type DestinationStream } from 'pino';
import { formatFields, type Logger, type LogLevel } from '../core/logger.ts';

export interface LoggerOptions {
  /** least severe level written @default 'info' */
  level?: LogLevel;
  /** one human line per event instead of JSON @default false */
  pretty?: boolean;
  /** where lines go @default process.stdout */
  out?: { write(text: string): unknown };
}

/** A pino logger writing JSON lines (or human lines with `pretty`) to `out`. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const out = options.out ?? process.stdout;
  const dest: DestinationStream = options.pretty ? prettyStream(out) : { write: (line: string) => out.write(line) };
  return pino(
    {
      level: options.level ?? 'info',
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      // "level":"warn" rather than pino's 40: greppable, and what log shippers map
      formatters: { level: (label) => ({ level: label }) },
    },
    dest,
  );
}

/** pino's JSON line → `12:00:01.234 INFO  promote: key promoted app=shop key=item:42 qps=1234` */
export function formatPretty(line: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const { level, time, msg, evt, ...fields } = rec;
  const clock = typeof time === 'string' ? time.slice(11, 23) : '';
  const name = String(level).toUpperCase().padEnd(5);
  const tag = typeof evt === 'string' ? `${evt}: ` : '';
  return `${clock} ${name} ${tag}${formatFields(typeof msg === 'string' ? msg : undefined, fields)}\n`;
}

function prettyStream(out: { write(text: string): unknown }): DestinationStream {
  return { write: (line: string) => void out.write(formatPretty(line)) };
}
