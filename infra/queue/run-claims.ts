import { hostname } from 'node:os';
import type Redis from 'ioredis';

/**
 * Which invocations an API process is running itself (CP_SYNC_INVOKES_IN_API), so the reaper
 * leaves them alone while that process lives. Such a run has no job in the queue: to the reaper
 * it looks like an invocation whose job is gone. A run is leased as it starts (one SET, which the
 * connection's auto-pipelining sends with the other commands of its tick), and the process renews the leases of its runs in flight every
 * `renewEveryMs`, in one pipeline. The lease of a run cut off by a crash lapses within `leaseMs`,
 * after which the reaper enqueues the invocation as it does any whose job is gone.
 *
 * Leased from its start, a run is covered whatever the reaper's own CP_REAP_AFTER_MS (QA: leased
 * first at the next renewal, 5 s later, runs were taken for lost by a reaper set to 1 s). A lease
 * lasts at least CP_JOB_LOCK_MS, as a worker's hold on its job does: a Redis outage that BullMQ's
 * jobs live through, these runs live through too (QA: after 21 s without Redis, a reaper that ran
 * before the API's next renewal took all of its runs for lost).
 */
export class RunClaims {
  readonly renewEveryMs: number;
  readonly leaseMs: number;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    timing: { reapAfterMs: number; jobLockMs: number },
    private readonly holder = `${hostname()}:${process.pid}`,
  ) {
    this.renewEveryMs = Math.max(250, Math.min(5_000, Math.floor(timing.reapAfterMs / 4)));
    this.leaseMs = Math.max(3 * this.renewEveryMs, timing.jobLockMs);
  }

  private key(invocationId: string): string {
    return `${this.prefix}:run:${invocationId}`;
  }

  /** Leases a run as it starts. */
  async claim(invocationId: string): Promise<void> {
    await this.redis.set(this.key(invocationId), this.holder, 'PX', this.leaseMs);
  }

  /** Leases (or renews) the runs for `leaseMs`. */
  async hold(invocationIds: Iterable<string>): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const id of invocationIds) pipeline.set(this.key(id), this.holder, 'PX', this.leaseMs);
    if (pipeline.length === 0) return;
    const results = (await pipeline.exec()) ?? [];
    const failed = results.find(([err]) => err);
    if (failed?.[0]) throw failed[0];
  }

  /** Whether a live process runs the invocation itself. */
  async held(invocationId: string): Promise<boolean> {
    return (await this.redis.exists(this.key(invocationId))) === 1;
  }
}
