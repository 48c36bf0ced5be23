/**
 * A cap on each org's webhook deliveries in flight, across every worker process: one org whose
 * receiver never answers holds at most this many of the workers' slots, so the other orgs'
 * deliveries still go out. A delivery whose org is at its cap goes back to the queue for a
 * moment (OrgAtCapacity); that is not an attempt, and it does not count against its retries.
 */
export interface OrgDeliverySlots {
  /**
   * Takes one of the org's slots for this job; false when the org has `cap` deliveries in flight.
   * Taking again a slot the job already holds (its job run again after a worker died) succeeds.
   * A slot not released (its worker killed) lapses by itself once no delivery can still be running.
   */
  take(orgId: string, jobId: string): Promise<boolean>;
  release(orgId: string, jobId: string): Promise<void>;
}

/** Thrown so the queue runs the delivery's job again in `delayMs`, without counting an attempt. */
export class OrgAtCapacity extends Error {
  constructor(readonly delayMs: number) {
    super(`the org has its cap of webhook deliveries in flight; tried again in ${delayMs} ms`);
    this.name = 'OrgAtCapacity';
  }
}

/**
 * How long a delivery waits for its org's slot: 250 to 1000 ms, jittered so waiters spread out,
 * doubling with each time it already waited, up to 30 s. A backlog behind a receiver that never
 * answers is then taken from the queue a few times a minute each, not several times a second.
 */
export const slotWaitMs = (deferrals = 0, random: () => number = Math.random): number =>
  Math.min(30_000, (250 + Math.floor(random() * 750)) * 2 ** Math.min(deferrals, 7));

/**
 * Runs `deliver` in one of the org's slots, or throws OrgAtCapacity when it has none free. The
 * slot is given back however the delivery ends; `onReleaseError` hears a failed release (the
 * slot then lapses by itself).
 */
export async function inOrgSlot<T>(
  slots: OrgDeliverySlots,
  job: { orgId: string; jobId: string; deferrals: number },
  deliver: () => Promise<T>,
  onReleaseError: (err: unknown) => void,
): Promise<T> {
  if (!(await slots.take(job.orgId, job.jobId))) throw new OrgAtCapacity(slotWaitMs(job.deferrals));
  try {
    return await deliver();
  } finally {
    await slots.release(job.orgId, job.jobId).catch(onReleaseError);
  }
}
