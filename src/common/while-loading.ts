/**
 * Runs `load` (a `require`) with `owner[key]` replaced by `value`, and puts the original property
 * back after, as it was (a value, or one of Node's lazy getters): for a dependency whose loading
 * would otherwise touch something costly that the agent never uses.
 */
export function withPropertyReplaced<T>(owner: object, key: string, value: unknown, load: () => T): T {
  const original = Object.getOwnPropertyDescriptor(owner, key);
  Object.defineProperty(owner, key, {
    value,
    configurable: true,
    writable: true,
    enumerable: original?.enumerable ?? false,
  });
  try {
    return load();
  } finally {
    if (original) Object.defineProperty(owner, key, original);
    else delete (owner as Record<string, unknown>)[key];
  }
}
