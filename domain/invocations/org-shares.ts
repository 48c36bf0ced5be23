import { PerKeySlots } from '../per-key-slots';

/**
 * A worker's invoke slots, shared among orgs: one org runs at most `cap` invocations at once in
 * one worker process, so an org whose provider answers slowly (or not at all until the timeout)
 * cannot take every slot and hold the other orgs' calls in the queue behind its own. Each worker
 * keeps CP_INVOKE_CONCURRENCY − cap slots for the others. Counted in the worker's memory: nothing
 * to ask Redis on the invoke path, and nothing left behind when a worker dies.
 */
export class OrgShares extends PerKeySlots {
  private readonly listeners = new Set<() => void>();

  /**
   * Told after every release, whoever released (SyncRuns: an invoke waiting for room in this
   * process may take it, also when a worker beside the API freed it, as in `npm start`).
   * Returns the way to stop listening.
   */
  onRelease(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  override release(key: string): void {
    super.release(key);
    for (const listener of this.listeners) listener();
  }
}

/**
 * How long an invocation past its org's share waits before it is taken again: a quarter of a
 * second, doubling with each time it already waited, up to 4 s, and half to all of it, so a
 * backlog is not fetched and put back several times a second.
 */
export const shareWaitMs = (deferrals = 0, random: () => number = Math.random): number =>
  Math.floor(Math.min(4_000, 250 * 2 ** Math.min(deferrals, 4)) * (0.5 + 0.5 * random()));
