/**
 * The parts of ioredis's `Command` the adapter reads, settles or replaces (public in JS, partly
 * untyped), and the marker of what the adapter already dispatched. ioredis is an optional peer:
 * its classes are never imported, only their shape.
 */
import type { Cluster, Redis } from 'ioredis';

export interface Cmd {
  name: string;
  args: unknown[];
  promise: Promise<unknown>;
  replyEncoding?: string | null;
  inTransaction?: boolean;
  isReadOnly?: boolean;
  getKeys: () => unknown[];
  resolve: (value: unknown) => unknown;
  reject: (error: Error) => void;
}
export type Client = Redis | Cluster;
/** `sendCommand`'s signature as the hook calls what lies under it */
export type Send = (this: Client, command: Cmd, stream?: unknown, node?: unknown) => unknown;
/** ioredis's Command class, taken from a command that passed the hook */
export type CmdCtor = new (name: string, args: unknown[], opts: object) => Cmd;

/**
 * Marks a Command the adapter already handed to ioredis: re-sends of it (offline queue,
 * reconnect, NOSCRIPT) pass straight through. A symbol property, not a WeakSet: one map
 * transition shared by every Command, so checking and setting it cost a few ns.
 */
const SENT: unique symbol = Symbol('hotkey.sent');
export const dispatched = {
  has: (command: object): boolean => (command as { [SENT]?: true })[SENT] === true,
  add: (command: object): void => {
    (command as { [SENT]?: true })[SENT] = true;
  },
};

/** A RESP2 subscriber connection rejects reads: let ioredis say so. */
export function inSubscriberMode(client: Client): boolean {
  return Boolean((client as { condition?: { subscriber?: unknown } | null }).condition?.subscriber);
}
