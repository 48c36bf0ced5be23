import { hostname } from 'node:os';
import type Redis from 'ioredis';

/**
 * Which invocations an API process is running itself (CP_SYNC_INVOKES_IN_API), so the reaper
 * leaves them alone while that process lives. Such a run has no job in the queue: to the reaper
 * it looks like an invocation whose job is gone. The process renews a lease for each run in flight
 * every `renewEveryMs`, in one pipeline: nothing per invoke on its path, and the lease of a run
 * cut off by a crash lapses within `leaseMs`, after which the reaper enqueues the invocation as it
 * does any whose job is gone.
 *
 * A run is first leased up to `renewEveryMs` after it starts. That is safe because the reaper
 * looks only at invocations without progress for CP_REAP_AFTER_MS, four renewals or more.
 */
export class RunClaims {
  readonly renewEveryMs: number;
  readonly leaseMs: number;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    reapAfterMs: number,
    private readonly holder = `${hostname()}:${process.pid}`,
  ) {
    this.renewEveryMs = Math.max(250, Math.min(5_000, Math.floor(reapAfterMs / 4)));
    this.leaseMs = 3 * this.renewEveryMs;
  }

  private key(invocationId: string): string {
    return `${this.prefix}:run:${invocationId}`;
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
