import { DELIVERY_WINDOW_MS } from './retry-schedule';

/**
 * A cap on each org's webhook deliveries in flight, across every worker process: one org whose
 * receiver never answers holds at most this many of the workers' slots, so the other orgs'
 * deliveries still go out. A delivery whose org has no slot for it stands in the org's waiting
 * line and goes back to the queue for a moment (OrgAtCapacity); that is not an attempt, and it
 * does not count against its retries. The line is ordered by when each delivery was queued, so
 * the longest waiting goes first and newer deliveries cannot keep an old one out for good.
 */
export interface OrgDeliverySlots {
  /**
   * Takes one of the org's slots for this job, in turn: the org has fewer than `cap` deliveries in
   * flight and none of its waiting line queued before `queuedAt` is owed the slot. Otherwise false,
   * and the job keeps (or takes) its place in the line. Taking again a slot the job already holds
   * (its job run again after a worker died) succeeds. A slot not released (its worker killed) lapses
   * by itself once no delivery can still be running, and a place in line whose job stopped asking.
   */
  take(orgId: string, jobId: string, queuedAt: number): Promise<boolean>;
  /** Gives the slot back; returns the jobs first in the line, as many as may now take a slot. */
  release(orgId: string, jobId: string): Promise<string[]>;
  /** Leaves the waiting line without a slot (the delivery was given up). */
  leave(orgId: string, jobId: string): Promise<void>;
  /** Whether a slot is free for this waiter now: it would take it. */
  owed(orgId: string, jobId: string): Promise<boolean>;
}

/**
 * Thrown so the queue runs the delivery's job again in `delayMs`, without counting an attempt.
 * Once the job waits out its delay, `owed` is asked: a slot released between the refusal and the
 * job's move to its delay found no delayed job to wake, so the job wakes itself.
 */
export class OrgAtCapacity extends Error {
  constructor(
    readonly delayMs: number,
    readonly owed: () => Promise<boolean> = () => Promise.resolve(false),
  ) {
    super(`the org has its cap of webhook deliveries in flight; tried again in ${delayMs} ms`);
    this.name = 'OrgAtCapacity';
  }
}

/**
 * How long a delivery waits for its org's slot when no one wakes it first: 250 to 1000 ms,
 * jittered so waiters spread out, doubling with each time it already waited, up to 30 s. A
 * released slot wakes the next in line at once (`wake`), so this is only the fallback for a slot
 * that lapsed; a backlog behind a receiver that never answers is not taken from the queue several
 * times a second.
 */
export const slotWaitMs = (deferrals = 0, random: () => number = Math.random): number =>
  Math.min(30_000, (250 + Math.floor(random() * 750)) * 2 ** Math.min(deferrals, 7));

/** A delivery's job, as its turn is decided. */
export interface SlotJob {
  orgId: string;
  jobId: string;
  /** When the job was queued (its place in line); a delivery waits at most its 24 hours from it. */
  queuedAt: number;
  /** Times it already waited for a slot. */
  deferrals: number;
}

/** What runs in the slot, and around it. */
export interface Turn<T> {
  deliver(): Promise<T>;
  /** Runs instead of waiting again once the job has been queued for the delivery's whole window. */
  tooLate(): Promise<T>;
  /** Wakes the jobs next in line when a slot is given back (they may be waiting up to 30 s). */
  wake(jobIds: string[]): Promise<void>;
  /** Hears a failed release or wake-up: the slot then lapses by itself, the waiter wakes on its own. */
  onError(err: unknown): void;
}

/**
 * Runs `turn.deliver` in one of the org's slots, or throws OrgAtCapacity when none is this job's
 * yet. The slot is given back however the delivery ends, and the next in line woken.
 */
export async function inOrgSlot<T>(
  slots: OrgDeliverySlots,
  now: number,
  job: SlotJob,
  turn: Turn<T>,
): Promise<T> {
  if (!(await slots.take(job.orgId, job.jobId, job.queuedAt))) {
    if (now - job.queuedAt < DELIVERY_WINDOW_MS)
      throw new OrgAtCapacity(slotWaitMs(job.deferrals), () => slots.owed(job.orgId, job.jobId));
    await slots.leave(job.orgId, job.jobId);
    return turn.tooLate();
  }
  try {
    return await turn.deliver();
  } finally {
    await slots
      .release(job.orgId, job.jobId)
      .then((next) => (next.length > 0 ? turn.wake(next) : undefined))
      .catch(turn.onError);
  }
}
