/** The fields of a BullMQ job that date its wait (as a worker receives it). */
export interface DatedJob {
  /** When it was added, by the adding process's clock. */
  timestamp: number;
  /** The delay it was added with; a scheduled job's runs to its slot. (`job.delay` reads 0 once due.) */
  opts: { delay?: number | undefined };
  attemptsMade: number;
  attemptsStarted: number;
}

/**
 * How long a job waited in its queue before a worker started it: from when it became due (added,
 * plus the delay it was added with) to `now`. Only a first start is dated. A retry or a restart
 * after a stall became due again at a time the job does not keep, so it reads null. Never
 * negative: the adding process's clock may run ahead of this one's.
 */
export function queueWaitMs(job: DatedJob, now: number): number | null {
  if (job.attemptsMade > 0 || job.attemptsStarted > 1) return null;
  return Math.max(0, now - (job.timestamp + (job.opts.delay ?? 0)));
}
