/**
 * What happens to this instance's hub connections (wire/connection.ts ConnectionHandler): a
 * Welcome admits a link and applies the app's config, a frame goes to dispatch.ts, a drop or a
 * refusal goes to status(), and a lost hub's hot keys go stale while its pending invalidations
 * move to the keys' new owners (or wait, held, for the next Welcome).
 */
import type { HotSet } from '../cache/hot-set.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import type { ConnectionHandler, HubConnection } from '../wire/connection.ts';
import type { Member, ServerMessage, Welcome } from '../wire/protocol.ts';
import type { AppConfig } from './report/app-config.ts';
import type { Dispatch } from './dispatch.ts';
import type { Holds } from './invalidate/holds.ts';
import type { Invalidator } from './invalidate/invalidator.ts';
import { askLease, wantLease } from './invalidate/leases.ts';
import type { HubLinks } from './links.ts';
import type { HotLoads } from './read/loads.ts';
import type { Readiness } from './readiness.ts';
import type { ClientStatus } from './observe/status.ts';

export interface HubEventsOptions {
  hot: HotSet;
  loads: HotLoads;
  config: AppConfig;
  readiness: Readiness;
  /** hot keys of a lost hub stay servable this long (ms) */
  maxStaleMs: number;
  /** the parts built after the handler they serve (the links take the handler) */
  links: () => HubLinks;
  dispatch: () => Dispatch;
  invalidator: () => Invalidator;
  holds: Holds;
  closed: () => boolean;
  /** reads the monotonic clock and refreshes the client's coarse reading */
  refreshCoarseNow: () => number;
  status: (status: ClientStatus) => void;
  /** logs, reports to status() and emits 'error' (when listened to) */
  fault: (error: Error, url: string | undefined, refused: boolean) => void;
}

export class HubEvents implements ConnectionHandler {
  readonly #o: HubEventsOptions;

  constructor(options: HubEventsOptions) {
    this.#o = options;
  }

  welcome(conn: HubConnection, welcome: Welcome): void {
    const o = this.#o;
    if (o.closed()) return;
    const clock = o.refreshCoarseNow();
    const links = o.links();
    if (!links.admit(conn, welcome)) return;
    const link = links.get(welcome.hub);
    if (link !== undefined) {
      // wanted for one lease after each Welcome, then while anything needs it (leases.ts)
      wantLease(link, clock);
      askLease(link, clock, true);
    }
    o.config.apply(welcome.rules, welcome.local, welcome.instances);
    o.status({ type: 'connect', hub: welcome.hub, url: conn.url });
    this.members(welcome.epoch, welcome.members, welcome.hub);
    o.invalidator().linked();
    o.readiness.resolve();
  }

  message(conn: HubConnection, message: ServerMessage): void {
    const o = this.#o;
    if (o.closed()) return;
    const link = o.links().linkOf(conn);
    if (link === undefined) return;
    o.refreshCoarseNow();
    o.dispatch().message(link, message);
  }

  down(conn: HubConnection, code: number, reason: string, welcomed: boolean): void {
    // registrations not answered yet die with the link (its entries are not served: holds.ts)
    const link = this.#o.links().linkOf(conn);
    if (link !== undefined) this.#o.holds.lost(link);
    // a failed attempt to reconnect is an 'error' + 'reconnecting', not another disconnect
    if (welcomed) this.#o.status({ type: 'disconnect', hub: conn.hubId, url: conn.url, code, reason });
    this.#o.links().down(conn, code);
  }

  reconnecting(conn: HubConnection, delayMs: number): void {
    this.#o.status({ type: 'reconnecting', url: conn.url, delayMs });
  }

  error(conn: HubConnection, error: Error): void {
    this.#o.fault(error, conn.url, false);
    // not fatal (a fixed certificate heals it), but ready() must not wait forever on a trust problem
    if (error instanceof HotKeyError && error.code === ErrorCode.Tls) this.#o.readiness.reject(error);
  }

  fatal(conn: HubConnection, error: Error): void {
    this.#o.links().forget(conn);
    this.#o.fault(error, conn.url, true);
    this.#o.readiness.reject(error);
  }

  /** A welcomed hub is gone: its keys moved to the other hubs and its hot keys go stale. */
  lost(hub: string): void {
    const o = this.#o;
    const clock = o.refreshCoarseNow();
    // Loads in flight may have missed an invalidation: they must not fill. Values cached already
    // stay servable under the old link's lease, which the hub waits out before any ack.
    for (const key of o.hot.invalidateHub(hub)) o.loads.drop(key);
    const stale = o.hot.markStale(hub, clock, o.maxStaleMs);
    if (stale > 0) o.status({ type: 'stale', hub, keys: stale });
    o.invalidator().hubLost(hub);
  }

  /** Connects to new members and drops those that left (links.ts), then tells status(). `from`: the hub that sent the list. */
  members(epoch: number, members: Member[], from: string): void {
    if (this.#o.links().applyMembers(epoch, members, from)) this.#o.status({ type: 'members', epoch, members });
  }
}
