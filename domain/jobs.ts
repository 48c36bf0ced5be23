import { z } from 'zod';

/**
 * The one contract of queues, job names, payloads and options shared by the API and the
 * workers. A worker refuses to start when a job name here has no processor (workers/registry.ts).
 */
export const QUEUES = { maintenance: 'maintenance' } as const;
export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

export const JOBS = {
  /** Chains pending audit events of every org into the sealed log. */
  'audit.seal': { queue: QUEUES.maintenance, payload: z.object({}).strict(), everyMs: 1_000 },
  /** Writes the last-used times kept in Redis to the keys table. */
  'keys.flush-last-used': { queue: QUEUES.maintenance, payload: z.object({}).strict(), everyMs: 30_000 },
  /** Drops Idempotency-Key records past their 24 hours. */
  'idempotency.delete-expired': {
    queue: QUEUES.maintenance,
    payload: z.object({}).strict(),
    everyMs: 3_600_000,
  },
} as const;

export type JobName = keyof typeof JOBS;
export type JobPayload<N extends JobName> = z.infer<(typeof JOBS)[N]['payload']>;

export const JOB_NAMES = Object.keys(JOBS) as JobName[];

/** Keep little history: job ids are not reused and Redis memory is not free. */
export const DEFAULT_JOB_OPTIONS = {
  removeOnComplete: { count: 100 },
  removeOnFail: { count: 1000 },
  attempts: 3,
  backoff: { type: 'exponential', delay: 500 },
} as const;
