/**
 * The one command shape the core reads, settles or replaces, whatever the client: an adapter
 * hands the core its client's command as this (ioredis's own `Command` has it already; the
 * node-redis adapter builds one per command it dispatches), and the core never imports a client.
 * Model: rueidis's one cache interface over its connections (`Completed` commands over `pipe`).
 */
export interface RedisCommand {
  /** lower case, as ioredis names its commands */
  name: string;
  /** the arguments after the name, keys with any key prefix applied */
  args: unknown[];
  promise: Promise<unknown>;
  /** 'utf8' for a string reply; null or undefined for Buffers (ioredis's `replyEncoding`) */
  replyEncoding?: string | null;
  inTransaction?: boolean;
  isReadOnly?: boolean;
  /** the keys among `args` (movable keys of EVAL, FCALL … included) */
  getKeys: () => unknown[];
  resolve: (value: unknown) => unknown;
  reject: (error: Error) => void;
}

/** Sends a command past the adapter's hook on `client`'s connection (stream and node: ioredis's pipelines and Cluster nodes). */
export type Send<C = object> = (this: C, command: RedisCommand, stream?: unknown, node?: unknown) => unknown;

/**
 * Marks a command the adapter already handed to its client: re-sends of it (offline queue,
 * reconnect, NOSCRIPT) pass straight through. A symbol property, not a WeakSet: one map
 * transition shared by every command, so checking and setting it cost a few ns.
 */
const SENT: unique symbol = Symbol('hotkey.sent');
export const dispatched = {
  has: (command: object): boolean => (command as { [SENT]?: true })[SENT] === true,
  add: (command: object): void => {
    (command as { [SENT]?: true })[SENT] = true;
  },
};
