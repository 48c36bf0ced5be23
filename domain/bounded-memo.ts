/** The last answers kept by key, at most `most` of them: the one used longest ago goes first. */
export class BoundedMemo<V> {
  /** A Map iterates in insertion order: a use moves its entry last. */
  private readonly kept = new Map<string, V>();

  constructor(private readonly most: number) {}

  get(key: string): V | undefined {
    const value = this.kept.get(key);
    if (value !== undefined) this.set(key, value);
    return value;
  }

  set(key: string, value: V): void {
    this.kept.delete(key);
    this.kept.set(key, value);
    if (this.kept.size > this.most) this.kept.delete(this.kept.keys().next().value as string);
  }

  get size(): number {
    return this.kept.size;
  }

  /** The answer kept for the key, or `compute`'s, kept. */
  answer(key: string, compute: () => V): V {
    const kept = this.get(key);
    if (kept !== undefined) return kept;
    const value = compute();
    this.set(key, value);
    return value;
  }
}
