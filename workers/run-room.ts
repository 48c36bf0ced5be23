/** What a try for room found: room taken, the org's share full, or the process's room full. */
export type RoomTry = 'taken' | 'org_full' | 'full';

interface Waiter {
  orgId: string;
  resolve(taken: boolean): void;
  timer: NodeJS.Timeout;
}

/** How long an invoke may wait, and how many may: in all, and of one org. */
export interface RoomLimits {
  /** CP_SYNC_INVOKE_ROOM_WAIT_MS. */
  maxWaitMs: number;
  maxWaiting: number;
  /** So one org's burst cannot take every place and send the others' invokes to the queue (QA). */
  maxWaitingPerOrg: number;
}

/**
 * Invokes waiting, in arrival order, for room to run in this API process (SyncRuns), each for at
 * most `maxWaitMs`; at most `maxWaiting` wait at once, and `maxWaitingPerOrg` of one org.
 *
 * Why wait rather than hand the invoke to the queue at once: when this process is full because its
 * cores are (a burst, a pause of the collector), a worker on the same cores runs the invoke at a
 * higher cost (the queued path's writes, BullMQ's scripts, a second process woken), so handing over
 * lowers what the machine serves just when it is behind: an open loop at 80% of the maximum never
 * caught up (docs/performance.md). Room frees within milliseconds then. When it is full because
 * providers answer slowly, it does not, and the invoke goes to the queue after the wait.
 */
export class RunRoom {
  private readonly waiting: Waiter[] = [];
  private readonly waitingByOrg = new Map<string, number>();

  constructor(
    private readonly tryTake: (orgId: string) => RoomTry,
    private readonly limits: RoomLimits,
  ) {}

  /**
   * Resolves true with room taken (the caller releases it, then calls `freed`), false when none
   * came within `waitMs` (at most `maxWaitMs`).
   */
  take(orgId: string, waitMs = this.limits.maxWaitMs): Promise<boolean> {
    // Not ahead of its own org's waiters; another org's full share does not hold it back.
    const ofOrg = this.waitingByOrg.get(orgId) ?? 0;
    if (ofOrg === 0 && this.tryTake(orgId) === 'taken') return Promise.resolve(true);
    const wait = Math.min(waitMs, this.limits.maxWaitMs);
    const full = this.waiting.length >= this.limits.maxWaiting || ofOrg >= this.limits.maxWaitingPerOrg;
    if (wait <= 0 || full) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        orgId,
        resolve,
        timer: setTimeout(() => {
          this.remove(waiter);
          resolve(false);
        }, wait),
      };
      this.waiting.push(waiter);
      this.waitingByOrg.set(orgId, ofOrg + 1);
    });
  }

  /** Room may have freed: the first waiters that now fit take it, oldest first. */
  freed(): void {
    for (let i = 0; i < this.waiting.length;) {
      const waiter = this.waiting[i] as Waiter;
      const got = this.tryTake(waiter.orgId);
      if (got === 'full') return;
      if (got === 'org_full') {
        i++;
        continue;
      }
      this.remove(waiter);
      clearTimeout(waiter.timer);
      waiter.resolve(true);
    }
  }

  /** Every waiter goes without (a shutdown: no new runs here). */
  clear(): void {
    for (const waiter of [...this.waiting]) {
      this.remove(waiter);
      clearTimeout(waiter.timer);
      waiter.resolve(false);
    }
  }

  get size(): number {
    return this.waiting.length;
  }

  private remove(waiter: Waiter): void {
    const at = this.waiting.indexOf(waiter);
    if (at < 0) return;
    this.waiting.splice(at, 1);
    const left = (this.waitingByOrg.get(waiter.orgId) ?? 1) - 1;
    if (left > 0) this.waitingByOrg.set(waiter.orgId, left);
    else this.waitingByOrg.delete(waiter.orgId);
  }
}
