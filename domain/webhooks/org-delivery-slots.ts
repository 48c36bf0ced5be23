import { OrgAtCapacity } from '../org-at-capacity';
import { DELIVERY_WINDOW_MS } from './retry-schedule';

/**
 * A cap on each org's webhook deliveries in flight, across every worker process: one org whose
 * receiver never answers holds at most this many of the workers' slots, so the other orgs'
 * deliveries still go out. A delivery whose org has no slot for it stands in the org's waiting
 * line and goes back to the queue for a moment (OrgAtCapacity); that is not an attempt, and it
 * does not count against its retries. The line is ordered by when each attempt first asked, so
 * the longest waiting goes first, newer deliveries cannot keep an old one out, and a retry goes
 * to the back as any new attempt does (a dead receiver's retries do not hold up the org's others).
 * Within the org, each receiver (webhook) has a smaller cap of its own: a delivery whose receiver
 * has that many in flight (or older waiters owed its free slots) waits out of the org's line, in
 * its receiver's line, so a receiver that never answers cannot hold the org's every slot with its
 * first attempts either.
 */
export interface OrgDeliverySlots {
  /**
   * Takes one of the org's slots for this job, in turn: the org has fewer than `cap` deliveries in
   * flight and no one ahead of the job in its line is owed the slot. Otherwise null, and the job
   * keeps (or takes, at the back) its place in the line. Taking again a slot the job already holds
   * (its job run again after a worker died, or a twin run after its lock was lost) succeeds, with
   * a new claim. A slot not released (its worker killed) lapses by itself once no delivery can
   * still be running; a place in line whose job stopped asking, after ten minutes.
   */
  take(orgId: string, jobId: string, webhookId: string | null): Promise<SlotClaim | null>;
  /**
   * Gives the slot back if this claim still holds it: a run whose twin took the slot over since
   * leaves it to the twin, so the org does not count one slot fewer while the twin delivers.
   * Returns the receiver's waiters its free slots are owed to, to be woken.
   */
  release(orgId: string, jobId: string, claim: SlotClaim, webhookId: string | null): Promise<string[]>;
  /** Leaves the waiting lines without a slot (the delivery was given up, or its job is gone). */
  leave(orgId: string, jobId: string, webhookId: string | null): Promise<void>;
  /** The waiters the org's free slots are owed to now: the first in line, one per free slot. */
  owedTo(orgId: string): Promise<string[]>;
  /** The receiver's waiters its free slots are owed to now, in the order they asked. */
  receiverOwedTo(orgId: string, webhookId: string | null): Promise<string[]>;
}

/** Which run of a job holds its slot: each take of the slot gets a new one. */
export type SlotClaim = number;

/**
 * How long a delivery waits for its org's slot when no one wakes it first: a ceiling of 1 s,
 * doubling with each time it already waited, up to 30 s, and a random quarter to all of it, so
 * waiters stay spread out at the ceiling too. A slot given back wakes the next in line at once
 * (`wakeOwed`), so this is the fallback; a backlog behind a receiver that never answers is not
 * taken from the queue several times a second.
 */
export const slotWaitMs = (deferrals = 0, random: () => number = Math.random): number =>
  Math.floor(Math.min(30_000, 1000 * 2 ** Math.min(deferrals, 5)) * (0.25 + 0.75 * random()));

/** A delivery's job, as its turn is decided. */
export interface SlotJob {
  orgId: string;
  jobId: string;
  /** The receiver (webhook) it goes to; null for a job queued before jobs named it. */
  webhookId: string | null;
  /** When the job was queued; a delivery waits at most its 24 hours from it. */
  queuedAt: number;
  /** Times it already waited for a slot. */
  deferrals: number;
}

/** What runs in the slot, and around it. */
export interface Turn<T> {
  deliver(): Promise<T>;
  /** Runs instead of waiting again once the job has been queued for the delivery's whole window. */
  tooLate(): Promise<T>;
  /** Wakes these waiters' jobs; returns the ones that have no job waiting any more (gone). */
  wake(jobIds: string[]): Promise<string[]>;
  /** Hears a failed release or wake-up: the slot then lapses by itself, the waiter wakes on its own. */
  onError(err: unknown): void;
}

/**
 * Wakes the waiters the org's free slots are owed to. One whose job is gone (removed, or ended
 * while it waited) leaves the line and the next is asked for, so a dead entry does not keep a
 * free slot from the living behind it.
 */
export async function wakeOwed(slots: OrgDeliverySlots, orgId: string, wake: Turn<unknown>['wake']) {
  for (let round = 0; round < 5; round++) {
    const owed = await slots.owedTo(orgId);
    if (owed.length === 0) return;
    const gone = await wake(owed);
    if (gone.length === 0) return;
    await Promise.all(gone.map((id) => slots.leave(orgId, id, null)));
  }
}

/** Wakes a receiver's waiters its freed slots are owed to; one whose job is gone leaves. */
async function wakeReceiver(
  slots: OrgDeliverySlots,
  job: SlotJob,
  owed: string[],
  wake: Turn<unknown>['wake'],
) {
  if (owed.length === 0) return;
  const gone = await wake(owed);
  await Promise.all(gone.map((id) => slots.leave(job.orgId, id, job.webhookId)));
}

/**
 * Runs `turn.deliver` in one of the org's slots, or throws OrgAtCapacity when none is this job's
 * yet (after waking those a free slot is owed to). The slot is given back however the delivery
 * ends, and the next in line woken.
 */
export async function inOrgSlot<T>(
  slots: OrgDeliverySlots,
  now: number,
  job: SlotJob,
  turn: Turn<T>,
): Promise<T> {
  const claim = await slots.take(job.orgId, job.jobId, job.webhookId);
  if (claim === null) {
    // The receiver's line too: a dead entry first in it would keep its free slots from the rest.
    await Promise.all([
      wakeOwed(slots, job.orgId, turn.wake),
      slots
        .receiverOwedTo(job.orgId, job.webhookId)
        .then((owed) => wakeReceiver(slots, job, owed, turn.wake)),
    ]).catch(turn.onError);
    if (now - job.queuedAt < DELIVERY_WINDOW_MS)
      throw new OrgAtCapacity(
        slotWaitMs(job.deferrals),
        // Owed by its org's line or by its receiver's (QA: one waiting on its receiver missed a
        // wake-up that came while it was put back, and slept up to 30 s beside an idle receiver).
        async () =>
          (await slots.owedTo(job.orgId)).includes(job.jobId) ||
          (await slots.receiverOwedTo(job.orgId, job.webhookId)).includes(job.jobId),
        'its cap of webhook deliveries in flight',
      );
    await slots.leave(job.orgId, job.jobId, job.webhookId);
    return turn.tooLate();
  }
  try {
    return await turn.deliver();
  } finally {
    await slots
      .release(job.orgId, job.jobId, claim, job.webhookId)
      .then((owed) =>
        Promise.all([wakeOwed(slots, job.orgId, turn.wake), wakeReceiver(slots, job, owed, turn.wake)]),
      )
      .catch(turn.onError);
  }
}
