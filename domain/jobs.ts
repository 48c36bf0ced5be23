import { z } from 'zod';

/**
 * The one contract of queues, job names, payloads and options shared by the API and the
 * workers. A worker refuses to start when a job name here has no processor (workers/processors.ts).
 */
export const QUEUES = {
  guardian: 'guardian',
  invoke: 'invoke',
  approvals: 'approvals',
  webhooks: 'webhooks',
  maintenance: 'maintenance',
} as const;
export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

/**
 * W3C trace context (traceparent, tracestate): one trace spans the request, the jobs and the
 * provider call. The propagator bounds tracestate to the W3C limit of 512 characters.
 */
const traceCarrier = z.record(z.string().max(64), z.string().max(1024));

/** Ids and trace context only: the request itself (messages, secrets) stays in PostgreSQL. */
const invocationJob = z
  .object({
    invocation_id: z.string().min(1).max(100),
    org_id: z.string().min(1).max(100),
    trace: traceCarrier,
    /**
     * Provider attempts an API process made before it handed the invocation to the queue
     * (CP_SYNC_INVOKES_IN_API): the job's attempts go on counting, and backing off, from there.
     */
    attempts_made: z.number().int().min(0).max(10).optional(),
  })
  .strict();

/** A `POST /v1/acs/evaluate`: its id only; the action waits in the evaluation relay. */
const evaluationJob = z
  .object({
    evaluation_id: z.string().min(1).max(100),
    org_id: z.string().min(1).max(100),
    trace: traceCarrier,
  })
  .strict();

/** An approval whose time runs out: delayed until its `expires_at`. */
const approvalJob = z
  .object({
    approval_id: z.string().min(1).max(100),
    org_id: z.string().min(1).max(100),
  })
  .strict();

/** One webhook delivery: its id only; the event waits in PostgreSQL. */
const webhookJob = z
  .object({
    delivery_id: z.string().min(1).max(100),
    org_id: z.string().min(1).max(100),
    /** Its receiver, for the receiver's cap; absent in jobs queued before it was carried. */
    webhook_id: z.string().min(1).max(100).optional(),
  })
  .strict();

const periodic = z.object({}).strict();

/** A provider's Retry-After decides the delay, else exponential with jitter (workers/start-workers.ts). */
export const PROVIDER_BACKOFF = 'provider';

/** Doubling from the configured base, at most an hour (domain/webhooks/retry-schedule.ts). */
export const WEBHOOK_BACKOFF = 'webhook';

export interface JobSpec {
  queue: QueueName;
  payload: z.ZodType;
  /** Periodic jobs run as BullMQ job schedulers at this interval. */
  everyMs?: number;
  /** Attempts before the job fails for good, retried after `backoffMs` (doubling, or `backoff`). */
  attempts?: number;
  backoffMs?: number;
  backoff?: 'exponential' | typeof PROVIDER_BACKOFF | typeof WEBHOOK_BACKOFF;
  /** Drop the job once done: for invocation stages the invocation row is the record. */
  removeOnComplete?: true;
}

/** Per-deployment settings of a job (attempts and backoff of provider calls come from config). */
export type JobOverrides = Partial<Record<JobName, Pick<JobSpec, 'attempts' | 'backoffMs'>>>;

export const JOBS = {
  /**
   * The guardian decides an invocation: allowed ones go on to `invocation.run`. An invoke's own job
   * is `invocation.run`, which decides first; this one runs for the reaper's requeues.
   */
  'invocation.evaluate': {
    queue: QUEUES.guardian,
    payload: invocationJob,
    attempts: 5,
    backoffMs: 200,
    removeOnComplete: true,
  },
  /** Decides an action for `POST /v1/acs/evaluate` with the same engine as every invoke. */
  'acs.evaluate': {
    queue: QUEUES.guardian,
    payload: evaluationJob,
    attempts: 3,
    backoffMs: 100,
    removeOnComplete: true,
  },
  /**
   * Decide a queued invocation (the guardian stage, in this job), then reserve, call the provider,
   * settle, record: one attempt per provider call.
   */
  'invocation.run': {
    queue: QUEUES.invoke,
    payload: invocationJob,
    attempts: 3,
    backoffMs: 1000,
    backoff: PROVIDER_BACKOFF,
    removeOnComplete: true,
  },
  /** Ends a pending approval at its `expires_at` and denies its invocation (`approval_expired`). */
  'approval.expire': {
    queue: QUEUES.approvals,
    payload: approvalJob,
    attempts: 5,
    backoffMs: 1000,
    removeOnComplete: true,
  },
  /** Expires pending approvals past their time whose delayed job was lost (Redis lost it, or it never got enqueued). */
  'approvals.sweep': { queue: QUEUES.maintenance, payload: periodic, everyMs: 10_000 },
  /** POSTs one webhook delivery; its 24-hour window, not `attempts`, ends the retries. */
  'webhook.deliver': {
    queue: QUEUES.webhooks,
    payload: webhookJob,
    attempts: 100,
    backoffMs: 5000,
    backoff: WEBHOOK_BACKOFF,
    removeOnComplete: true,
  },
  /** Enqueues again the pending webhook deliveries whose job was lost. */
  'webhooks.sweep': { queue: QUEUES.maintenance, payload: periodic, everyMs: 60_000 },
  /** Deletes webhook deliveries that ended longer than the retention ago. */
  'webhooks.prune': { queue: QUEUES.maintenance, payload: periodic, everyMs: 3_600_000 },
  /** Returns reservations whose job died and requeues invocations whose job was lost. */
  'invocations.reap': { queue: QUEUES.maintenance, payload: periodic, everyMs: 10_000 },
  /** Records open sessions past their expiry as expired (they already refuse invokes). */
  'sessions.expire': { queue: QUEUES.maintenance, payload: periodic, everyMs: 15_000 },
  /** Chains pending audit events of every org into the sealed log; often, so each seal is small. */
  'audit.seal': { queue: QUEUES.maintenance, payload: periodic, everyMs: 200 },
  /** Writes the last-used times kept in Redis to the keys table. */
  'keys.flush-last-used': { queue: QUEUES.maintenance, payload: periodic, everyMs: 30_000 },
  /** Drops Idempotency-Key records past their 24 hours. */
  'idempotency.delete-expired': { queue: QUEUES.maintenance, payload: periodic, everyMs: 3_600_000 },
} as const satisfies Record<string, JobSpec>;

export type JobName = keyof typeof JOBS;
export type JobPayload<N extends JobName> = z.infer<(typeof JOBS)[N]['payload']>;
export type InvocationJob = z.infer<typeof invocationJob>;
export type EvaluationJob = z.infer<typeof evaluationJob>;
export type ApprovalJob = z.infer<typeof approvalJob>;
export type WebhookJob = z.infer<typeof webhookJob>;

export const JOB_NAMES = Object.keys(JOBS) as JobName[];

export const jobSpec = (name: JobName): JobSpec => JOBS[name];

/** Keep little history: job ids are not reused and Redis memory is not free. */
export const DEFAULT_JOB_OPTIONS = {
  removeOnComplete: { count: 100 },
  removeOnFail: { count: 1000 },
  attempts: 3,
  backoff: { type: 'exponential', delay: 500 },
} as const;

/** Job ids are the invocation ids, so a duplicate enqueue of the same stage is one job. */
export const invocationJobId = (invocationId: string): string => invocationId;

/** Attempts made before a job began: by the API process that handed it over (`attempts_made`). */
export const attemptsMadeBefore = (data: unknown): number => {
  const made = (data as { attempts_made?: unknown } | null | undefined)?.attempts_made;
  return typeof made === 'number' ? made : 0;
};

/**
 * The invoke job a submit enqueues (it decides, then runs) has an id of its own: the job an
 * approval enqueues to resume the invocation must never be taken for the one that paused it, which
 * may still hold its id for a few milliseconds after the pause, or until the lock of a worker that
 * died lapses.
 */
export const submitJobId = (invocationId: string): string => `${invocationId}-submit`;
