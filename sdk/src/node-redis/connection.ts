/**
 * The node-redis adapter's connections of its own, for tracking (redis/tracking/tracking.ts drives them
 * through its `TrackingConnection` interface): each is a node-redis client duplicated from the
 * user's, RESP2 (tracking redirects to a RESP2 subscriber, as for ioredis), no key prefix, no
 * client-side cache, no offline queue, no type mapping, and no reconnection of its own. When its
 * socket ends (node-redis's 'end', or an 'error' after which it is not open: a server restart
 * emits no 'end'), the connection reports 'close' and makes a fresh client after a capped backoff:
 * a fresh client is never in subscriber mode, so tracking's `CLIENT ID` then `SUBSCRIBE` start
 * each incarnation the same way (node-redis would resubscribe a reconnected client first, and a
 * RESP2 subscriber refuses `CLIENT ID`).
 */
import { EventEmitter } from 'node:events';
import type { TrackingConnection } from '../redis/tracking/tracking.ts';

/** What the adapter uses of a node-redis client (v5 and v6): sends, transactions, pub/sub, events. */
export interface NodeRedisLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  connect(): Promise<unknown>;
  destroy(): void;
  sendCommand(args: readonly unknown[], options?: object): Promise<unknown>;
  multi(): { addCommand(args: readonly unknown[]): unknown; exec(): Promise<unknown[]> };
  subscribe(channel: string, listener: (message: unknown, channel: Buffer) => void, bufferMode: true): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  once(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
}

/** The overrides that make a duplicate of the user's client one of ours. */
export function ownOverrides(options: { socket?: object } | undefined, name: string): object {
  return {
    RESP: 2,
    name,
    keyPrefix: undefined,
    clientSideCache: undefined,
    emitInvalidate: undefined,
    disableOfflineQueue: true,
    commandOptions: undefined,
    pingInterval: undefined,
    // node-redis 5.9+ / 6: maintenance push notifications need RESP3; ours is RESP2
    maintNotifications: 'disabled',
    socket: { ...options?.socket, reconnectStrategy: false },
  };
}

/** backoff between incarnations: 50 ms per failed attempt, at most 1 s */
const backoffMs = (attempt: number) => Math.min(50 * attempt, 1000);

export class NodeRedisConnection extends EventEmitter implements TrackingConnection {
  readonly #make: () => NodeRedisLike;
  #client: NodeRedisLike | undefined;
  #closed = false;
  #attempts = 0;
  #timer: NodeJS.Timeout | undefined;
  /** ends the current incarnation (once): 'close', then a new one unless closed */
  #end: (() => void) | undefined;

  /** @param make a fresh, unconnected node-redis client (a duplicate of the user's with `ownOverrides`) */
  constructor(make: () => NodeRedisLike) {
    super();
    this.#make = make;
    // opened once the caller has put its listeners on (tracking does, right after making it)
    queueMicrotask(() => this.#open());
  }

  /** a fault nobody listens to is dropped, never thrown (an EventEmitter throws an unheard 'error') */
  #fault(error: unknown): void {
    if (this.listenerCount('error') > 0) this.emit('error', error instanceof Error ? error : new Error(String(error)));
  }

  get status(): string {
    if (this.#closed) return 'end';
    return this.#client?.isReady === true ? 'ready' : 'connecting';
  }

  #open(): void {
    if (this.#closed) return;
    let client: NodeRedisLike;
    try {
      client = this.#make();
    } catch (err) {
      this.#fault(err);
      return this.#retry();
    }
    this.#client = client;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      if (this.#client === client) this.#client = undefined;
      this.emit('close');
      this.#retry();
    };
    this.#end = end;
    // without a reconnect strategy of its own, node-redis (5.12, 6.3) reports a socket the server
    // closed (a restart) with 'error' alone, no 'end': an error that leaves it not open ends it
    client.on('error', (err: Error) => {
      this.#fault(err);
      if (!client.isOpen) end();
    });
    client.on('end', end);
    client.on('ready', () => {
      this.#attempts = 0;
      this.emit('ready');
    });
    client.connect().catch((err: unknown) => {
      this.#fault(err);
      try {
        client.destroy();
      } catch {
        // already closed
      }
      end();
    });
  }

  #retry(): void {
    if (this.#closed || this.#timer !== undefined) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#open();
      },
      backoffMs(++this.#attempts),
    );
    this.#timer.unref?.();
  }

  #live(): NodeRedisLike {
    const client = this.#client;
    if (client === undefined || !client.isReady) throw new Error('hotkey tracking connection is down');
    return client;
  }

  client(...args: string[]): Promise<unknown> {
    try {
      return this.#live().sendCommand(['CLIENT', ...args]);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  subscribe(channel: string): Promise<unknown> {
    try {
      return this.#live().subscribe(channel, (message, from) => this.emit('messageBuffer', from, message), true);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  multi(commands: string[][]): { exec(): Promise<Array<[Error | null, unknown]> | null> } {
    return {
      exec: async () => {
        const multi = this.#live().multi();
        for (const command of commands) multi.addCommand(command);
        // node-redis rejects the whole EXEC when one reply is an error: tracking then reads elsewhere
        const replies = await multi.exec();
        return replies.map((reply): [Error | null, unknown] => [null, reply]);
      },
    };
  }

  ping(): Promise<unknown> {
    try {
      return this.#live().sendCommand(['PING']);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  disconnect(reconnect = false): void {
    if (!reconnect) {
      this.#closed = true;
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    const client = this.#client;
    if (client === undefined) return;
    try {
      client.destroy();
    } catch {
      // already closed
    }
    // reported as 'close' (and a new incarnation unless closed) whether or not node-redis emits
    // 'end' for a client its destroy() found dead already
    this.#end?.();
  }
}
