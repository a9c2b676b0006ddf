/**
 * A connection of the ioredis adapter's own to one node, as tracking drives it
 * (redis/tracking/tracking-session.ts's `TrackingConnection`): an unwrapped duplicate of the user's client
 * (own-connection.ts makes it) that shows nothing of itself where the user's client shows its
 * commands. ioredis 6 reports every connection's connects, commands and transactions on its
 * diagnostics channels (`ioredis:connect`, `ioredis:command`, `ioredis:batch`,
 * https://nodejs.org/api/diagnostics_channel.html#class-tracingchannel), which an APM or a test
 * reads as the application's traffic; ours are not the application's, so:
 * - every command of ours is marked traced already (ioredis traces a command once: `isTraced`);
 * - a connect goes straight to the attempt (`_connect`), past the traced `connect()`;
 * - a transaction is sent as its commands, MULTI … EXEC, not as a pipeline (traced as a batch).
 * ioredis 5 has no such channels (nor `_connect`): there it is a plain duplicate. A patch of the
 * class's `sendCommand` (an APM agent's) still sees our commands: they reach Redis
 * (docs/reference/ioredis-adapter.md, "Patch order").
 */
import type { Redis } from 'ioredis';
import type { TrackingConnection } from '../redis/tracking/tracking-session.ts';

type Send = (this: Redis, command: { isTraced?: boolean }, stream?: unknown) => unknown;

export class IoredisTrackingConnection implements TrackingConnection {
  readonly #redis: Redis;

  /** @param redis a duplicate made with `lazyConnect: true`: connected here, once its hooks are on */
  constructor(redis: Redis) {
    this.#redis = redis;
    const own = redis as unknown as Record<string, unknown>;
    // read at each call: a patch of the class's method made later still applies
    own.sendCommand = function sendCommand(this: Redis, command: { isTraced?: boolean }, stream?: unknown) {
      command.isTraced = true;
      return (Object.getPrototypeOf(this).sendCommand as Send).call(this, command, stream);
    };
    const attempt = own._connect;
    // ioredis reconnects through connect() too
    if (typeof attempt === 'function') own.connect = (): Promise<void> => attempt.call(redis);
    redis.connect().catch(() => {}); // a failure is the 'error' and 'close' its listeners hear
  }

  get status(): string {
    return this.#redis.status;
  }

  on(event: string, listener: (...args: never[]) => void): this {
    this.#redis.on(event, listener as (...args: unknown[]) => void);
    return this;
  }

  client(...args: string[]): Promise<unknown> {
    return this.#redis.call('client', ...args);
  }

  subscribe(channel: string): Promise<unknown> {
    return this.#redis.subscribe(channel);
  }

  ping(): Promise<unknown> {
    return this.#redis.ping();
  }

  multi(commands: string[][]): { exec(): Promise<Array<[Error | null, unknown]> | null> } {
    return { exec: () => this.#transaction(commands) };
  }

  /**
   * MULTI, `commands`, EXEC, written in one go (nothing of another caller's comes between), and
   * EXEC's replies as `[error, value]` each (ioredis's `exec()`). A refused command fails it all
   * (Redis discards the transaction).
   */
  async #transaction(commands: string[][]): Promise<Array<[Error | null, unknown]> | null> {
    const redis = this.#redis;
    const sent: Promise<unknown>[] = [redis.multi({ pipeline: false })];
    for (const [name, ...args] of commands) sent.push(redis.call(name!, ...args));
    sent.push(redis.exec());
    const replies = await Promise.all(sent);
    return replies[replies.length - 1] as Array<[Error | null, unknown]> | null;
  }

  disconnect(reconnect?: boolean): void {
    this.#redis.disconnect(reconnect);
  }
}
