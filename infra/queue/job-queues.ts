import { Queue, type JobsOptions } from 'bullmq';
import type Redis from 'ioredis';
import {
  DEFAULT_JOB_OPTIONS,
  invocationJobId,
  submitJobId,
  JOBS,
  jobSpec,
  type InvocationJob,
  type JobName,
  type JobOverrides,
  type JobPayload,
  type JobSpec,
  type QueueName,
  QUEUES,
} from '../../domain/jobs';
import type { ApprovalTimers } from '../../domain/approvals/approval-store';
import type { InvocationStage, JobState, StageQueue } from '../../domain/invocations/signals';
import { MicroBatcher } from '../micro-batcher';
import { bullConnectionOptions, REDIS_COMMAND_TIMEOUT_MS } from '../redis/connections';

const ALIVE = new Set(['active', 'waiting', 'delayed', 'prioritized', 'waiting-children']);

interface BulkJob {
  name: JobName;
  data: unknown;
  opts: JobsOptions;
}

/**
 * Fails an add that Redis has not answered within REDIS_COMMAND_TIMEOUT_MS. The producer's own
 * command timeout does not cover its first connection: a queue first used while Redis is down waits
 * for it to come back, and a governed invoke's request hung until it did (QA: 59 s). Its jobs may
 * still be added later, as any whose answer was lost; their ids make that one job.
 */
async function withinCommandTimeout(adding: Promise<unknown>, queueName: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new Error(`queue ${queueName}: Redis did not answer within ${REDIS_COMMAND_TIMEOUT_MS} ms`)),
      REDIS_COMMAND_TIMEOUT_MS,
    );
  });
  adding.catch(() => undefined); // a late failure, after the timeout answered
  try {
    await Promise.race([adding, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Producers for every queue, with job options set in one place (domain/jobs.ts, plus overrides). */
export class JobQueues {
  private readonly queues = new Map<QueueName, Queue>();
  /** Jobs enqueued at the same time go to Redis together: one addBulk, one round trip. */
  private readonly batches = new Map<QueueName, MicroBatcher<BulkJob, void>>();

  constructor(
    private readonly redisUrl: string,
    readonly bullPrefix: string,
    private readonly overrides: JobOverrides = {},
  ) {}

  queue(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, {
        connection: {
          ...bullConnectionOptions(this.redisUrl),
          enableOfflineQueue: false,
          commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
        },
        prefix: this.bullPrefix,
        defaultJobOptions: DEFAULT_JOB_OPTIONS,
      });
      queue.on('error', () => undefined); // producers fail fast; callers see the rejected promise
      this.queues.set(name, queue);
    }
    return queue;
  }

  /** Attempts, backoff and retention of a job: its contract, with this deployment's overrides. */
  optionsOf(name: JobName): JobsOptions {
    const spec: JobSpec = { ...jobSpec(name), ...this.overrides[name] };
    return {
      ...(spec.attempts ? { attempts: spec.attempts } : {}),
      ...(spec.backoffMs ? { backoff: { type: spec.backoff ?? 'exponential', delay: spec.backoffMs } } : {}),
      ...(spec.removeOnComplete ? { removeOnComplete: true } : {}),
    };
  }

  enqueue<N extends JobName>(
    name: N,
    payload: JobPayload<N>,
    jobId?: string,
    delayMs?: number,
    attempts?: number,
  ): Promise<void> {
    const spec = JOBS[name];
    const opts = {
      ...this.optionsOf(name),
      ...(jobId ? { jobId } : {}),
      ...(delayMs && delayMs > 0 ? { delay: Math.ceil(delayMs) } : {}),
      ...(attempts ? { attempts } : {}),
    };
    return this.batchOf(spec.queue).submit({ name, data: spec.payload.parse(payload), opts });
  }

  private batchOf(name: QueueName): MicroBatcher<BulkJob, void> {
    let batch = this.batches.get(name);
    if (!batch) {
      batch = new MicroBatcher(async (jobs) => {
        await this.addTogether(this.queue(name), jobs);
        return jobs.map(() => undefined);
      });
      this.batches.set(name, batch);
    }
    return batch;
  }

  /**
   * A lone job goes through `add`: BullMQ builds `addBulk`'s pipeline by copying every one of its
   * ~50 scripts onto it, which cost the API about a twentieth of its CPU at one caller.
   */
  private async addTogether(queue: Queue, jobs: BulkJob[]): Promise<void> {
    const [only] = jobs;
    const adding =
      jobs.length === 1 && only ? queue.add(only.name, only.data, only.opts) : queue.addBulk(jobs);
    await withinCommandTimeout(adding, queue.name);
  }

  /**
   * The invoke pipeline's jobs: one per invocation and stage, whose job id is the invocation id,
   * and the submit's first job, under an id of its own.
   */
  readonly stages: StageQueue = {
    submit: (job) => this.enqueue('invocation.run', job, submitJobId(job.invocation_id)),
    enqueue: (stage, job) => this.enqueue(stage, job, invocationJobId(job.invocation_id)),
    state: (stage, invocationId) => this.stageState(stage, invocationId),
    requeue: (stage, job) => this.requeue(stage, job),
  };

  /**
   * The submit's job of an invocation an API process began running itself and could not finish
   * (CP_SYNC_INVOKES_IN_API): after `delayMs`, with the attempts its run left.
   */
  handOver(job: InvocationJob, delayMs: number, attempts: number): Promise<void> {
    return this.enqueue('invocation.run', job, submitJobId(job.invocation_id), delayMs, attempts);
  }

  /** One delayed job per approval, whose job id is the approval id (a second schedule is a no-op). */
  readonly approvalTimers: ApprovalTimers = {
    expireAt: (approval) =>
      this.enqueue(
        'approval.expire',
        { approval_id: approval.id, org_id: approval.orgId },
        approval.id,
        approval.expiresAt.getTime() - Date.now(),
      ),
  };

  /**
   * The submit's job runs both stages, so an invocation in either waits on it too: a queued one is
   * decided by it or by a guardian job the reaper enqueued, a running one runs in it or in the
   * invoke job an approval or the reaper enqueued. It waits on whichever of the two is alive.
   */
  private async stageState(stage: InvocationStage, invocationId: string): Promise<JobState> {
    const invoke = this.queue(JOBS['invocation.run'].queue);
    const states = await Promise.all([
      invoke.getJobState(submitJobId(invocationId)),
      this.queue(JOBS[stage].queue).getJobState(invocationJobId(invocationId)),
    ]);
    if (states.some((state) => ALIVE.has(state))) return 'alive';
    return states.every((state) => state === 'unknown') ? 'gone' : 'ended';
  }

  private async requeue(stage: InvocationStage, job: InvocationJob): Promise<void> {
    const queue = this.queue(JOBS[stage].queue);
    const old = await queue.getJob(invocationJobId(job.invocation_id));
    if (old && !ALIVE.has(await old.getState())) await old.remove();
    await this.stages.enqueue(stage, job);
  }

  /** Answers when every producer connection made so far does: the API enqueues through them. */
  async ping(): Promise<void> {
    this.queue(QUEUES.guardian);
    await Promise.all(
      [...this.queues.values()].map(async (q) => ((await q.backend.client) as unknown as Redis).ping()),
    );
  }

  /** Periodic jobs, as BullMQ Job Schedulers (upserted, so every replica may call this). */
  async ensureSchedules(): Promise<void> {
    for (const [name, spec] of Object.entries(JOBS)) {
      if (!('everyMs' in spec)) continue;
      await this.queue(spec.queue).upsertJobScheduler(name, { every: spec.everyMs }, { name, data: {} });
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
  }
}
