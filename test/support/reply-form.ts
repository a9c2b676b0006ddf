/**
 * A Redis client's reply as comparable data: its values, their order, and the kind and prototype
 * of every container (an object with a null prototype, a plain one, a `Map`, an array, a Buffer),
 * so that `assert.equal(form(a), form(b))` says whether a caller could tell `a` from `b`.
 */
export function form(value: unknown): unknown {
  if (value instanceof Map) return { map: [...value.entries()].map(([k, v]) => [form(k), form(v)]) };
  if (Buffer.isBuffer(value)) return { buffer: value.toString('hex') };
  if (Array.isArray(value)) return { array: value.map(form) };
  if (typeof value === 'object' && value !== null) {
    const proto = Object.getPrototypeOf(value);
    const kind = proto === null ? 'null-prototype' : proto === Object.prototype ? 'object' : 'other';
    return { [kind]: Object.keys(value).map((k) => [k, form((value as Record<string, unknown>)[k])]) };
  }
  return value;
}
