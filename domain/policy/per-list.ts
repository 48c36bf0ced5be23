/**
 * `build` worked out once per rule list: a compiled policy set keeps its lists for as long as it
 * is used, so what a rule compares against is made on its first evaluation, not on every one.
 */
export function perList<T>(build: (list: readonly string[]) => T): (list: readonly string[]) => T {
  const built = new WeakMap<readonly string[], T>();
  return (list) => {
    let value = built.get(list);
    if (value === undefined) {
      value = build(list);
      built.set(list, value);
    }
    return value;
  };
}
