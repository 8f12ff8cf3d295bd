/**
 * Class brands that survive the dual package. The ESM and the CommonJS
 * build of a package are two module instances, each with its own classes:
 * an error made by the copy an adapter `require`s is not an `instanceof`
 * the class the application `import`ed. A registry symbol (`Symbol.for`) is
 * the same in every copy, and in every installed version, so a class
 * branded with one recognises instances made by any copy.
 */

/** The registry symbol marking instances of the class branded `name`. */
function brandKey(name: string): symbol {
  return Symbol.for(`infersignal.${name}`);
}

function carries(value: unknown, key: symbol): boolean {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false;
  try {
    return (value as Record<symbol, unknown>)[key] === true;
  } catch {
    // A revoked proxy or a throwing getter is not ours.
    return false;
  }
}

/**
 * Brands `cls` as `name` (e.g. `QueueFullError`): its prototype carries
 * `Symbol.for('infersignal.<name>')`, and `value instanceof cls` is true
 * for instances of the class (and its subclasses) made by any copy of the
 * package. A subclass keeps the ordinary prototype check of its own name.
 */
// biome-ignore lint/suspicious/noExplicitAny: any constructor signature
export function brand(cls: abstract new (...args: any[]) => unknown, name: string): void {
  const key = brandKey(name);
  Object.defineProperty(cls.prototype, key, { value: true });
  Object.defineProperty(cls, Symbol.hasInstance, {
    value(this: unknown, value: unknown): boolean {
      if (this !== cls) return Function.prototype[Symbol.hasInstance].call(this, value);
      return carries(value, key);
    },
  });
}
