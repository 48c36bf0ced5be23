/**
 * At most `cap` things at once per key (an org, a client address), counted in this process: a
 * key holding none is forgotten, and a release more than it took lends it nothing.
 */
export class PerKeySlots {
  private readonly held = new Map<string, number>();

  constructor(readonly cap: number) {}

  /** Takes one of the key's slots; false when it already holds `cap`. */
  take(key: string): boolean {
    const n = this.held.get(key) ?? 0;
    if (n >= this.cap) return false;
    this.held.set(key, n + 1);
    return true;
  }

  release(key: string): void {
    const n = (this.held.get(key) ?? 0) - 1;
    if (n > 0) this.held.set(key, n);
    else this.held.delete(key);
  }

  heldBy(key: string): number {
    return this.held.get(key) ?? 0;
  }

  hasRoom(key: string): boolean {
    return this.heldBy(key) < this.cap;
  }
}
