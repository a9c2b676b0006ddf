/**
 * Where the wrapper's hook sits among other patches of a client's `sendCommand` (APM agents,
 * spies, counters), so that it works in any patch order and a patch sees the commands that reach
 * Redis — not the hot reads answered locally.
 *
 * The hook is an accessor `sendCommand` on the prototype the wrapper inserts under the client
 * (`client → hooked → Redis.prototype`); the instance gets no own property. Its getter returns a
 * "level" function, its setter takes a user's patch and puts it under the hook:
 * - a patch on the class (`Redis.prototype.sendCommand`, as @opentelemetry/instrumentation-ioredis,
 *   dd-trace and New Relic do it), before or after wrapping: under the hook, read at each call;
 * - an own `sendCommand` on the instance before wrapping (assigned, or defined by shimmer or sinon):
 *   moved under the hook (the own property is removed; `client.sendCommand` then reads the hook);
 * - `client.sendCommand = patch(client.sendCommand)` after wrapping: the setter stacks `patch`
 *   under the hook. `patch` wraps the level function it read, which knows its depth: called by
 *   `patch`, it sends on to the layer below `patch` (down to the class's method), never back into
 *   the hook, so nothing is counted twice and nothing loops. Assigning a level function read
 *   earlier (the way such patches are undone) removes the patches stacked since;
 * - `Object.defineProperty(client, 'sendCommand', …)` after wrapping (shimmer's `wrap` on the
 *   instance) makes an own property that shadows the accessor: that patch sits ABOVE the hook and
 *   sees every command the client is given, hot reads answered locally included (the hook still
 *   works under it: it calls the level function it read). No setter runs, so this is the one order
 *   the wrapper cannot reorder.
 * Command methods (`client.get = spy(client.get)`) sit above the hook in every order: they see
 * every call, as on a plain client, and the hook serves what they pass on.
 */

/** ioredis's `sendCommand(command, stream?, node?)` */
export type Send = (this: object, command: never, stream?: unknown, node?: unknown) => unknown;
type AnySend = (this: object, command: unknown, stream?: unknown, node?: unknown) => unknown;

export interface Layers {
  /** Sends past the hook: through the user's instance patches (newest first), then the class's method. */
  readonly down: Send;
  /** The accessor to install on the hooked prototype. */
  readonly descriptor: PropertyDescriptor;
}

/**
 * The layering of `client`'s `sendCommand` around `hook`. Throws TypeError for an own
 * `sendCommand` it cannot move under the hook (an accessor, or not configurable).
 */
export function layerSendCommand(client: object, base: Record<string | symbol, unknown>, hook: Send): Layers {
  const layers: AnySend[] = [];
  const own = Object.getOwnPropertyDescriptor(client, 'sendCommand');
  if (own !== undefined) {
    if (typeof own.value !== 'function')
      throw new TypeError('withHotKeys: client.sendCommand is an own accessor or not a function: it cannot be hooked');
    if (own.configurable !== true)
      throw new TypeError('withHotKeys: client.sendCommand is an own non-configurable property: it cannot be hooked');
    layers.push(own.value as AnySend);
  }
  // fixed arity (ioredis passes at most command, stream, node): no rest array per command
  const sendAt = (k: number, self: object, command: unknown, stream: unknown, node: unknown): unknown =>
    k === 0
      ? (base.sendCommand as AnySend).call(self, command, stream, node)
      : layers[k - 1]!.call(self, command, stream, node);
  const levels: AnySend[] = [];
  /** the function a patch stacked at depth k + 1 wraps: the hook while it is the top, else the layers under it */
  const level = (k: number): AnySend =>
    (levels[k] ??= function sendCommand(this: object, command: unknown, stream?: unknown, node?: unknown): unknown {
      return k === layers.length
        ? (hook as AnySend).call(this, command, stream, node)
        : sendAt(k, this, command, stream, node);
    });
  const down = function (this: object, command: unknown, stream?: unknown, node?: unknown): unknown {
    return sendAt(layers.length, this, command, stream, node);
  } as Send;
  const descriptor: PropertyDescriptor = {
    configurable: true,
    enumerable: own?.enumerable ?? isEnumerable(base, 'sendCommand'),
    get(): AnySend {
      return level(layers.length);
    },
    set(this: object, fn: unknown): void {
      if (typeof fn !== 'function') {
        // not a patch: the instance's own value, as on a plain client (the hook is shadowed)
        Object.defineProperty(this, 'sendCommand', { value: fn, writable: true, configurable: true, enumerable: true });
        return;
      }
      const undone = levels.indexOf(fn as AnySend);
      if (undone >= 0) layers.length = Math.min(layers.length, undone);
      else if (fn === base.sendCommand)
        layers.length = 0; // the class's method put back: no instance patch left
      else layers.push(fn as AnySend);
    },
  };
  return { down, descriptor };
}

/** Moves an own `sendCommand` of the client (checked by layerSendCommand) under the hook. */
export function removeOwnSendCommand(client: object): void {
  if (Object.hasOwn(client, 'sendCommand')) delete (client as { sendCommand?: unknown }).sendCommand;
}

export function isEnumerable(proto: object | null, name: string): boolean {
  for (let o = proto; o !== null; o = Object.getPrototypeOf(o) as object | null) {
    const d = Object.getOwnPropertyDescriptor(o, name);
    if (d !== undefined) return d.enumerable === true;
  }
  return false;
}
