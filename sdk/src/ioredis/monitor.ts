/**
 * The MONITOR connection a wrapped client's `monitor()` makes: a `duplicate({ monitor: true })`,
 * left unwrapped (it carries no reads or writes). ioredis enters monitor mode (`status`
 * 'monitoring') a microtask after MONITOR's reply is handled, so a monitored command that comes in
 * the same read as that reply is taken for the reply to a command never sent ("Command queue state
 * error", emitted on the connection, which rejects `monitor()`). Any other connection busy at that
 * moment causes it (github.com/taskforcesh/bullmq/issues/2505), and a process whose clients are
 * wrapped has such connections: the tracking connections' set-up and heartbeats. Here MONITOR's
 * reply puts the connection in monitor mode as it is handled; ioredis still emits 'monitoring'
 * when it gets there.
 */
import type { Client, RedisCommand } from './command.ts';
import { isEnumerable } from './layers.ts';

type Send = (this: Client, command: RedisCommand, stream?: unknown) => unknown;

/** Hooks MONITOR's reply on `copy` (a monitor connection, not connected yet) and returns it. */
export function monitorFrom(copy: Client): Client {
  const proto = Object.getPrototypeOf(copy) as { sendCommand: Send };
  // under ioredis's own monitor-mode filter, which it puts on the instance at each 'ready'
  function sendCommand(this: Client, command: RedisCommand, stream?: unknown): unknown {
    if (command.name === 'monitor') {
      const resolve = command.resolve;
      command.resolve = (value: unknown) => {
        const out = resolve(value);
        if ((command as { isResolved?: boolean }).isResolved === true && this.status === 'ready')
          (this as { status: string }).status = 'monitoring';
        return out;
      };
    }
    return proto.sendCommand.call(this, command, stream);
  }
  const layer = Object.create(proto, {
    sendCommand: {
      value: sendCommand,
      writable: true,
      configurable: true,
      enumerable: isEnumerable(proto, 'sendCommand'),
    },
  }) as object;
  Object.setPrototypeOf(copy, layer);
  return copy;
}
