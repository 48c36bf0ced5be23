import { Worker, type Job } from 'bullmq';
import {
  attemptsMadeBefore,
  JOBS,
  PROVIDER_BACKOFF,
  QUEUES,
  WEBHOOK_BACKOFF,
  type JobName,
  type QueueName,
} from '../domain/jobs';
import { RetryLater } from '../domain/invocations/run-invocation';
import type { Infra } from '../infra/container';
import { bullConnectionOptions } from '../infra/redis/connections';
import { closeOrGiveUp } from './close-or-give-up';
import { deferring } from './defer-job';
import { failedJobLog } from './failed-job-log';
import type { JobInfo } from './invocation-processors';
import { PROCESSORS } from './processors';
import { queueWaitMs } from './queue-wait';
import { webhookBackoff } from './webhook-processor';

export interface RunningWorkers {
  close(): Promise<void>;
}

const isJobName = (name: string): name is JobName => Object.hasOwn(JOBS, name);

/** Longest a provider may make us wait between attempts, whatever its Retry-After says. */
const MAX_RETRY_DELAY_MS = 60_000;

/**
 * Delay before a provider call is tried again: the provider's Retry-After when it sent one, else
 * exponential from the configured base, with jitter so retries of a burst do not arrive together.
 */
export function providerBackoff(
  attemptsMade: number,
  job: Pick<Job, 'opts'> | undefined,
  err?: Error,
): number {
  const base = (job?.opts.backoff as { delay?: number } | undefined)?.delay ?? 1000;
  if (err instanceof RetryLater && err.retryAfterMs !== null)
    return Math.min(Math.max(err.retryAfterMs, base), MAX_RETRY_DELAY_MS);
  const exponential = base * 2 ** Math.max(0, attemptsMade - 1);
  return Math.min(Math.round(exponential * (0.5 + Math.random() / 2)), MAX_RETRY_DELAY_MS);
}

const CONCURRENCY = (infra: Infra): Record<QueueName, number> => ({
  guardian: infra.config.CP_GUARDIAN_CONCURRENCY,
  invoke: infra.config.CP_INVOKE_CONCURRENCY,
  approvals: 4,
  webhooks: infra.config.CP_WEBHOOK_CONCURRENCY,
  maintenance: 2,
});

const madeBefore = (job: Pick<Job, 'data'>): number => attemptsMadeBefore(job.data);

/** What a processor knows of its job; a handed-over job's attempts count on from its API's. */
export const jobInfoOf = (
  job: Pick<Job, 'id' | 'attemptsMade' | 'attemptsStarted' | 'opts' | 'timestamp' | 'data'>,
): JobInfo => ({
  id: job.id ?? '',
  attemptsMade: job.attemptsMade + madeBefore(job),
  attempts: (job.opts.attempts ?? 1) + madeBefore(job),
  deferrals: Math.max(0, job.attemptsStarted - job.attemptsMade - 1),
  queuedAt: job.timestamp,
});

/** The provider backoff of an invoke job, going on from the attempts made before it. */
export const invokeBackoff = (attemptsMade: number, job: Pick<Job, 'opts' | 'data'>, err?: Error): number =>
  providerBackoff(attemptsMade + madeBefore(job), job, err);

function processJob(job: Job, infra: Infra): Promise<unknown> {
  if (!isJobName(job.name)) throw new Error(`no processor for job ${job.name}`);
  const payload = JOBS[job.name].payload.parse(job.data);
  const info = jobInfoOf(job);
  return (PROCESSORS[job.name] as (p: typeof payload, i: Infra, j: typeof info) => Promise<unknown>)(
    payload,
    infra,
    info,
  );
}

/** Records how long the job waited for a worker, then times its run (a deferral as `deferred`). */
function measuredJob(queue: QueueName, job: Job, token: string | undefined, infra: Infra): Promise<unknown> {
  const name = isJobName(job.name) ? job.name : 'unknown';
  const waitedMs = queueWaitMs(job, Date.now());
  if (waitedMs !== null) infra.metrics.jobWaited(queue, name, waitedMs / 1000);
  return infra.metrics.timeJob(queue, name, () => deferring(job, token, processJob(job, infra)));
}

function startWorker(queue: QueueName, infra: Infra): Worker {
  const worker = new Worker(queue, (job, token) => measuredJob(queue, job, token, infra), {
    connection: bullConnectionOptions(infra.urls.redisUrl),
    prefix: infra.queues.bullPrefix,
    concurrency: CONCURRENCY(infra)[queue],
    // A killed worker's jobs are taken over once their lock lapses (checked as often).
    lockDuration: infra.config.CP_JOB_LOCK_MS,
    stalledInterval: infra.config.CP_JOB_LOCK_MS,
    maxStalledCount: 2,
    settings: {
      backoffStrategy: (attemptsMade, type, err, job) => {
        if (type === WEBHOOK_BACKOFF) return webhookBackoff(attemptsMade, job as Job);
        return type === PROVIDER_BACKOFF ? invokeBackoff(attemptsMade, job as Job, err) : 1000;
      },
    },
  });
  worker.on('failed', failedJobLog(infra.logger));
  worker.on('error', (err) => infra.logger.error({ err, queue }, 'worker error'));
  return worker;
}

/** Job schedulers live in Redis: a Redis restarted empty would lose them, so they are renewed. */
const SCHEDULE_RENEWAL_MS = 60_000;

/** Starts one BullMQ worker per queue asked for (all by default) and the periodic jobs. */
export async function startWorkers(
  infra: Infra,
  queues: QueueName[] = Object.values(QUEUES),
): Promise<RunningWorkers> {
  const workers = queues.map((q) => startWorker(q, infra));
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  await infra.queues.ensureSchedules();
  const renewal = setInterval(() => {
    infra.queues
      .ensureSchedules()
      .catch((err: unknown) => infra.logger.warn({ err }, 'could not renew job schedules'));
  }, SCHEDULE_RENEWAL_MS);
  renewal.unref();
  infra.logger.info({ queues }, 'workers ready');
  return {
    // close() waits for jobs in flight; a job cut off by a hard kill is retried by the stalled check.
    close: async () => {
      clearInterval(renewal);
      await closeOrGiveUp(Promise.all(workers.map((w) => w.close())), infra.checks.redis);
    },
  };
}
