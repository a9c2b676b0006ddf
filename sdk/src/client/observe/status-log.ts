/**
 * The log line each connection state change writes (`logger` option, pino-style: fields first,
 * then the message), and the one a hub fault writes. Kept apart from the client so that its
 * wiring does not drown in log fields.
 */
import type { ClientLogger } from '../../options.ts';
import type { ClientStatus } from './status.ts';

/** Logs one status change of the client of `app`. */
export function logStatus(log: ClientLogger, app: string, status: ClientStatus): void {
  switch (status.type) {
    case 'connect':
      log.info({ evt: 'connect', app, hub: status.hub, url: status.url }, 'connected to hub');
      break;
    case 'disconnect':
      log.warn(
        { evt: 'disconnect', app, hub: status.hub, url: status.url, code: status.code, reason: status.reason },
        'hub disconnected',
      );
      break;
    case 'reconnecting':
      log.debug({ evt: 'reconnecting', url: status.url, delayMs: status.delayMs }, 'reconnecting');
      break;
    case 'members':
      log.debug({ evt: 'members', epoch: status.epoch, members: status.members.map((m) => m.id) }, 'cluster members');
      break;
    case 'stale':
      log.warn({ evt: 'stale', hub: status.hub, keys: status.keys }, 'hot keys of a lost hub served stale');
      break;
    case 'stale-value':
      log.warn(
        { evt: 'stale-value', key: status.key, err: status.error.message },
        'reload failed: serving the last value',
      );
      break;
    case 'resync':
      log.info({ evt: 'resync', hub: status.hub, reason: status.reason }, 'resynchronising the hot set');
      break;
    case 'closed':
      log.info({ evt: 'closed', app }, 'client closed');
      break;
  }
}

/** Logs a hub connection fault; `refused`: the hub refused this client for good (no retry). */
export function logFault(log: ClientLogger, error: Error, url: string | undefined, refused: boolean): void {
  const code = (error as { code?: unknown }).code;
  if (refused) log.error({ evt: 'refused', url, code, err: error.message }, 'hub refused this client; not retrying');
  else log.warn({ evt: 'error', url, code, err: error.message }, 'hub connection fault');
}
