import { DelayedError, type Job } from 'bullmq';
import { OrgAtCapacity } from '../domain/org-at-capacity';

/**
 * A job that must wait its turn (its org has used its share: OrgAtCapacity) goes back to the
 * queue, delayed, without counting as a failed attempt (BullMQ's DelayedError). Once it is
 * delayed it asks whether it is owed a slot after all, and if so runs at once: the slot was given
 * back while it was being refused, and the release's wake-up found no delayed job to promote.
 */
export async function deferring(
  job: Pick<Job, 'moveToDelayed' | 'promote'>,
  token: string | undefined,
  run: Promise<unknown>,
): Promise<unknown> {
  try {
    return await run;
  } catch (err) {
    if (!(err instanceof OrgAtCapacity) || token === undefined) throw err;
    await job.moveToDelayed(Date.now() + err.delayMs, token);
    // Failing to ask, or a promote refused (the releaser's wake-up came first), leaves the delay.
    if (await err.owed().catch(() => false)) await job.promote().catch(() => undefined);
    throw new DelayedError();
  }
}
