/**
 * The node-redis methods that put a command in the client's queue past `sendCommand` (pub/sub,
 * MONITOR, QUIT, RESET) or end the connection (close, destroy, disconnect): each sends the GETs
 * the read path holds till the end of the job (redis/read/held-reads.ts) first, so that they keep
 * their place on the connection — before a SUBSCRIBE that would refuse them in RESP2, before a
 * QUIT or close that would refuse them altogether. node-redis binds the lower-case aliases
 * (`subscribe = this.SUBSCRIBE`) on the instance when it is built: those own properties are
 * pointed at the hooked methods (same names, so the instance's own keys stay a plain client's).
 */
type Proto = Record<string | symbol, unknown>;
type Method = (this: { _self?: object }, ...args: unknown[]) => unknown;

/** upper-case command methods and their instance aliases; then plain methods of the class */
const ALIASED: Readonly<Record<string, string>> = {
  SUBSCRIBE: 'subscribe',
  UNSUBSCRIBE: 'unsubscribe',
  PSUBSCRIBE: 'pSubscribe',
  PUNSUBSCRIBE: 'pUnsubscribe',
  SSUBSCRIBE: 'sSubscribe',
  SUNSUBSCRIBE: 'sUnsubscribe',
  MONITOR: 'monitor',
  QUIT: 'quit',
};
const PLAIN = ['close', 'destroy', 'disconnect', 'reset'] as const;

/** Property descriptors for the hooked prototype: each method of `base` above, sending what is held first. */
export function flushingMethods(base: Proto, flush: (client: object) => void): PropertyDescriptorMap {
  const out: PropertyDescriptorMap = {};
  for (const name of [...Object.keys(ALIASED), ...PLAIN]) {
    const own = base[name];
    if (typeof own !== 'function') continue;
    const original = own as Method;
    const wrapped = function (this: { _self?: object }, ...args: unknown[]): unknown {
      flush(this._self ?? this);
      return original.apply(this, args);
    };
    out[name] = { value: wrapped, writable: true, configurable: true };
  }
  return out;
}

/** Points `real`'s own aliases of `base`'s methods (node-redis's `quit = this.QUIT`) at `hooked`'s. */
export function pointAliases(real: object, base: Proto, hooked: Proto): void {
  const self = real as Proto;
  for (const [upper, alias] of Object.entries(ALIASED)) {
    if (Object.hasOwn(self, alias) && self[alias] === base[upper] && typeof hooked[upper] === 'function')
      self[alias] = hooked[upper];
  }
}
