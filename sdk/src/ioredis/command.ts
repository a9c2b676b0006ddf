/**
 * ioredis's side of the core's command shape (redis/command.ts): ioredis's `Command` is a `RedisCommand`
 * already (public in JS, partly untyped). ioredis is an optional peer: its classes are never
 * imported, only their shape.
 */
import type { Cluster, Redis } from 'ioredis';
import type { RedisCommand } from '../redis/command.ts';

export { dispatched, type RedisCommand } from '../redis/command.ts';
export type Client = Redis | Cluster;
/** `sendCommand`'s signature as the hook calls what lies under it */
export type Send = (this: Client, command: RedisCommand, stream?: unknown, node?: unknown) => unknown;
/** ioredis's Command class, taken from a command that passed the hook */
export type RedisCommandCtor = new (name: string, args: unknown[], opts: object) => RedisCommand;

/** A RESP2 subscriber connection rejects reads: let ioredis say so. */
export function inSubscriberMode(client: Client): boolean {
  return Boolean((client as { condition?: { subscriber?: unknown } | null }).condition?.subscriber);
}
