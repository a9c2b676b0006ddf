/**
 * Where the wrapper's hook sits among other patches of a client's `sendCommand` (APM agents,
 * spies, counters), so that it works in any patch order and a patch sees the commands that reach
 * Redis — not the hot reads answered locally.
 *
 * The hook is a plain data property `sendCommand` on the prototype the wrapper inserts under the
 * client (`client → hooked → Redis.prototype`); its value is a "level" function, and the instance
 * gets no own property. A data property, not an accessor, because that is what test doubles and
 * shimmers look for: sinon's `spy`/`stub` walk the prototype chain for a descriptor with a
 * function `value` and refuse (or silently skip) an accessor. No setter runs on assignment, so a
 * patch put on the instance is found when it first calls into the hook:
 * - a patch on the class (`Redis.prototype.sendCommand`, as @opentelemetry/instrumentation-ioredis,
 *   dd-trace and New Relic do it), before or after wrapping: under the hook, read at each call;
 * - an own `sendCommand` on the instance before wrapping (assigned, or defined by shimmer or sinon):
 *   moved under the hook at wrapping (the own property is removed);
 * - `client.sendCommand = patch(client.sendCommand)` after wrapping makes an own, enumerable
 *   property above the hook. Its first command reaches the level function `patch` wrapped, which
 *   sees it there and moves it under the hook (the own property is removed, the prototype's value
 *   becomes the new top); that one command, already seen by `patch`, is sent to Redis as a plain
 *   client sends it (nothing answered locally), so `patch` still sees only what reaches Redis.
 *   The client's GET method (wrapper.ts) settles it too, before sending anything: the one place
 *   a replacement that never calls what it read (the class's method assigned back, say) is met.
 *   `patch` wraps a level function that knows its depth: called by `patch`, it sends on to the
 *   layer below (down to the class's method), never back into the hook, so nothing is counted
 *   twice and nothing loops. Assigning back a level function read earlier, or the class's method
 *   (the ways such patches are undone), removes the patches stacked since, at the next command or GET;
 * - `Object.defineProperty(client, 'sendCommand', …)` after wrapping — shimmer's `wrap` on the
 *   instance, `sinon.spy` / `sinon.stub` — copies the prototype property's attributes (not
 *   enumerable) and is undone by a redefinition or a `delete` the hook never sees, so it is left
 *   where it is: ABOVE the hook, seeing every command the client is given, hot HGET/HGETALL
 *   answered locally included (the hook still works under it: it calls the level function it
 *   read). A stub that never calls through replaces the hook, as it replaces the method on a plain
 *   client; GET's fast path (a method, wrapper.ts) answers hot hits only while no own
 *   `sendCommand` it has not met sits on the instance, so it never goes around such a stub.
 * Command methods (`client.get = spy(client.get)`) sit above the hook in every order: they see
 * every call, as on a plain client, and the hook serves what they pass on.
 */

/** ioredis's `sendCommand(command, stream?, node?)` */
export type Send = (this: object, command: never, stream?: unknown, node?: unknown) => unknown;
type AnySend = (this: object, command: unknown, stream?: unknown, node?: unknown) => unknown;
/** The hook for a command a patch above it has seen already: nothing answered locally, sent on with `send`. */
export type SendSeen = (
  this: object,
  command: never,
  stream: unknown,
  node: unknown,
  send: (this: object, command: never, stream?: unknown, node?: unknown) => unknown,
) => unknown;

export interface Layers {
  /** Sends past the hook: through the user's instance patches (newest first), then the class's method. */
  readonly down: Send;
  /** The data property to install on the hooked prototype. */
  readonly descriptor: PropertyDescriptor;
  /** Hands over the hooked prototype: the top level is put back on it whenever patches are stacked or undone. */
  attach(hooked: object): void;
  /** No own `sendCommand` the hook has not met sits on the client: a method may answer without a command. */
  hookOnTop(): boolean;
}

/**
 * The layering of `client`'s `sendCommand` around `hook` (and `seen`, for the command that
 * revealed an assigned patch). Throws TypeError for an own `sendCommand` it cannot move under the
 * hook (an accessor, or not configurable).
 */
export function layerSendCommand(
  client: object,
  base: Record<string | symbol, unknown>,
  hook: Send,
  seen: SendSeen,
): Layers {
  const layers: AnySend[] = [];
  const own = Object.getOwnPropertyDescriptor(client, 'sendCommand');
  if (own !== undefined) {
    if (typeof own.value !== 'function')
      throw new TypeError('withHotKeys: client.sendCommand is an own accessor or not a function: it cannot be hooked');
    if (own.configurable !== true)
      throw new TypeError('withHotKeys: client.sendCommand is an own non-configurable property: it cannot be hooked');
    layers.push(own.value as AnySend);
  }
  const self = client as { sendCommand?: unknown };
  let hooked: { sendCommand?: unknown } | undefined;
  /** an own `sendCommand` defined after wrapping, met in a call: it stays above the hook */
  let above: unknown;
  // fixed arity (ioredis passes at most command, stream, node): no rest array per command
  const sendAt = (k: number, that: object, command: unknown, stream: unknown, node: unknown): unknown =>
    k === 0
      ? (base.sendCommand as AnySend).call(that, command, stream, node)
      : layers[k - 1]!.call(that, command, stream, node);
  const levels: AnySend[] = [];
  const publish = (): void => {
    if (hooked !== undefined) hooked.sendCommand = level(layers.length);
  };
  /**
   * Settles an own `sendCommand` the hook has not met: a value read earlier assigned back undoes
   * the patches stacked since ('undone'); an assigned patch is moved under the hook ('moved'); a
   * defined one is left above ('kept').
   */
  const settle = (): 'undone' | 'moved' | 'kept' => {
    const value = self.sendCommand;
    const undone = levels.indexOf(value as AnySend);
    if (undone >= 0 || value === base.sendCommand) {
      layers.length = Math.min(layers.length, Math.max(undone, 0));
      delete self.sendCommand;
      publish();
      return 'undone';
    }
    if (typeof value === 'function' && Object.prototype.propertyIsEnumerable.call(client, 'sendCommand')) {
      layers.push(value as AnySend);
      delete self.sendCommand;
      publish();
      return 'moved';
    }
    return 'kept';
  };
  /** the function a patch stacked at depth k + 1 wraps: the hook while it is the top, else the layers under it */
  const level = (k: number): AnySend =>
    (levels[k] ??= function sendCommand(this: object, command: unknown, stream?: unknown, node?: unknown): unknown {
      if (Object.hasOwn(client, 'sendCommand') && self.sendCommand !== above) {
        const settled = settle();
        if (settled === 'kept')
          above = self.sendCommand; // it calls through: met
        else if (settled === 'moved') {
          // the patch just moved saw this command above the hook: send it on below that patch
          const below = function (this: object, c: unknown, s?: unknown, n?: unknown): unknown {
            return sendAt(Math.min(k, layers.length), this, c, s, n);
          };
          return (seen as unknown as AnySeen).call(this, command, stream, node, below);
        }
      }
      // a level above the top (read before an undo) is the hook too
      return k >= layers.length
        ? (hook as AnySend).call(this, command, stream, node)
        : sendAt(k, this, command, stream, node);
    });
  const down = function (this: object, command: unknown, stream?: unknown, node?: unknown): unknown {
    return sendAt(layers.length, this, command, stream, node);
  } as Send;
  const descriptor: PropertyDescriptor = {
    value: level(layers.length),
    writable: true,
    configurable: true,
    // the class method's: a copy made by Object.defineProperty (sinon) is told from an assignment by it
    enumerable: isEnumerable(base, 'sendCommand'),
  };
  return {
    down,
    descriptor,
    attach(proto: object): void {
      hooked = proto as { sendCommand?: unknown };
    },
    // called before anything is sent: an assigned patch is moved under at once, with no command seen above
    hookOnTop: (): boolean =>
      !Object.hasOwn(client, 'sendCommand') || self.sendCommand === above || settle() !== 'kept',
  };
}
type AnySeen = (this: object, command: unknown, stream: unknown, node: unknown, send: AnySend) => unknown;

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
