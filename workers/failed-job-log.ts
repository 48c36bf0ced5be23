import type { Job } from 'bullmq';
import { JOBS, type JobSpec } from '../domain/jobs';
import type { Logger } from '../infra/logger';

/** A periodic job's failures are logged at most this often: the seal runs five times a second. */
export const PERIODIC_FAILURE_LOG_MS = 60_000;

const isPeriodic = (name: string): boolean =>
  Object.hasOwn(JOBS, name) && (JOBS as Record<string, JobSpec>)[name]!.everyMs !== undefined;

/**
 * The worker's `failed` listener. Every failure of a job with a payload of its own is logged; a
 * periodic job that keeps failing (its database unreachable, an org that cannot be sealed) is
 * logged once, then once a minute with how many failures the log left out since.
 */
export function failedJobLog(
  logger: Pick<Logger, 'warn'>,
  now: () => number = Date.now,
): (job: Pick<Job, 'name' | 'id'> | undefined, err: Error) => void {
  const lastLogged = new Map<string, { at: number; unlogged: number }>();
  return (job, err) => {
    const name = job?.name ?? 'unknown';
    const last = isPeriodic(name) ? lastLogged.get(name) : undefined;
    if (last && now() - last.at < PERIODIC_FAILURE_LOG_MS) {
      last.unlogged++;
      return;
    }
    if (isPeriodic(name)) lastLogged.set(name, { at: now(), unlogged: 0 });
    // `err` goes through the logger's serializer: never its message, which may hold SQL values.
    const left = last ? { failures_not_logged: last.unlogged } : {};
    logger.warn({ job: name, job_id: job?.id, err, ...left }, 'job failed');
  };
}
