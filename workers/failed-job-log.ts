import type { Job } from 'bullmq';
import { attemptsMadeBefore, JOBS, type JobSpec } from '../domain/jobs';
import type { Logger } from '../infra/logger';
import { LOG_EVERY_MS, OnceAMinute } from '../infra/logging/once-a-minute';

/** A periodic job's failures are logged at most this often: the seal runs five times a second. */
export const PERIODIC_FAILURE_LOG_MS = LOG_EVERY_MS;

const isPeriodic = (name: string): boolean =>
  Object.hasOwn(JOBS, name) && (JOBS as Record<string, JobSpec>)[name]!.everyMs !== undefined;

/** A failed attempt the queue runs again (a provider's 503, a webhook receiver's 500): the plan. */
const willRetry = (job: FailedJob | undefined, err: Error): boolean =>
  err.name !== 'UnrecoverableError' &&
  job?.attemptsMade !== undefined &&
  job.attemptsMade < (job.opts?.attempts ?? 1);

type FailedJob = Pick<Job, 'name' | 'id'> & Partial<Pick<Job, 'attemptsMade' | 'opts' | 'data'>>;

/**
 * The worker's `failed` listener. Every failure of a job with a payload of its own is logged: at
 * info, with the error's type only, when the queue runs it again (a retry is the plan, not a
 * fault: QA read 41 stacks of planned retries as failures), else at warn with the error; a
 * periodic job that keeps failing (its database unreachable, an org that cannot be sealed) is
 * logged once, then once a minute with how many failures the log left out since.
 */
export function failedJobLog(
  logger: Pick<Logger, 'warn' | 'info'>,
  now: () => number = Date.now,
): (job: FailedJob | undefined, err: Error) => void {
  const periodicFailures = new OnceAMinute(now);
  return (job, err) => {
    const name = job?.name ?? 'unknown';
    if (!isPeriodic(name) && willRetry(job, err)) {
      // Counted from the invocation's first attempt, made in an API process for a handed-over job.
      const attempt =
        job?.attemptsMade === undefined ? undefined : job.attemptsMade + attemptsMadeBefore(job.data);
      logger.info(
        { job: name, job_id: job?.id, attempt, error: err.name },
        'job attempt failed; it will be retried',
      );
      return;
    }
    const due = isPeriodic(name) ? periodicFailures.due(name) : null;
    if (due && !due.log) return;
    // `err` goes through the logger's serializer: never its message, which may hold SQL values.
    const left = due?.log && due.skipped > 0 ? { failures_not_logged: due.skipped } : {};
    logger.warn({ job: name, job_id: job?.id, err, ...left }, 'job failed');
  };
}
