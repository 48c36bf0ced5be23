import { Queue, type JobsOptions } from 'bullmq';
import type Redis from 'ioredis';
import {
  DEFAULT_JOB_OPTIONS,
  invocationJobId,
  JOBS,
  jobSpec,
  type InvocationJob,
  type JobName,
  type JobPayload,
  type QueueName,
  QUEUES,
} from '../../domain/jobs';
import type { InvocationStage, JobState, StageQueue } from '../../domain/invocations/signals';
import { MicroBatcher } from '../micro-batcher';
import { bullConnectionOptions } from '../redis/connections';

/** The backoff type of provider retries: honours a provider's Retry-After (providerBackoff in workers/start-workers.ts). */
export const PROVIDER_BACKOFF = 'provider';

export interface RetryPolicy {
  /** Attempts of `invocation.run`: each is one provider call. */
  invokeAttempts: number;
  /** First retry delay of a provider call; doubles each attempt unless the provider says otherwise. */
  invokeBackoffMs: number;
}

const ALIVE = new Set(['active', 'waiting', 'delayed', 'prioritized', 'waiting-children']);

/** Producers for every queue, with job options set in one place (domain/jobs.ts and the retry policy). */
export class JobQueues {
  private readonly queues = new Map<QueueName, Queue>();

  constructor(
    private readonly redisUrl: string,
    readonly bullPrefix: string,
    private readonly retry: RetryPolicy = { invokeAttempts: 3, invokeBackoffMs: 1000 },
  ) {}

  queue(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, {
        connection: { ...bullConnectionOptions(this.redisUrl), enableOfflineQueue: false },
        prefix: this.bullPrefix,
        defaultJobOptions: DEFAULT_JOB_OPTIONS,
      });
      queue.on('error', () => undefined); // producers fail fast; callers see the rejected promise
      this.queues.set(name, queue);
    }
    return queue;
  }

  /** Attempts and backoff of a job: the invoke policy for provider calls, the contract's otherwise. */
  optionsOf(name: JobName): JobsOptions {
    // Invocation jobs leave nothing behind when done: the invocation row is their record.
    if (name === 'invocation.run')
      return {
        attempts: this.retry.invokeAttempts,
        backoff: { type: PROVIDER_BACKOFF, delay: this.retry.invokeBackoffMs },
        removeOnComplete: true,
      };
    if (name === 'invocation.evaluate') return { ...this.contractOptions(name), removeOnComplete: true };
    return this.contractOptions(name);
  }

  private contractOptions(name: JobName): JobsOptions {
    const spec = jobSpec(name);
    return {
      ...(spec.attempts ? { attempts: spec.attempts } : {}),
      ...(spec.backoffMs ? { backoff: { type: 'exponential', delay: spec.backoffMs } } : {}),
    };
  }

  async enqueue<N extends JobName>(name: N, payload: JobPayload<N>, jobId?: string): Promise<void> {
    const spec = JOBS[name];
    await this.queue(spec.queue).add(name, spec.payload.parse(payload), {
      ...this.optionsOf(name),
      ...(jobId ? { jobId } : {}),
    });
  }

  /** The invoke pipeline's jobs: one per invocation and stage, whose job id is the invocation id. */
  readonly stages: StageQueue = {
    enqueue: (stage, job) => this.enqueueStage(stage, job),
    state: (stage, invocationId) => this.stageState(stage, invocationId),
    requeue: (stage, job) => this.requeue(stage, job),
  };

  /** Stage jobs enqueued at the same time go to Redis together (one addBulk, one round trip). */
  private readonly stageBatches = new Map<InvocationStage, MicroBatcher<InvocationJob, void>>();

  private enqueueStage(stage: InvocationStage, job: InvocationJob): Promise<void> {
    let batcher = this.stageBatches.get(stage);
    if (!batcher) {
      const options = this.optionsOf(stage);
      const payload = JOBS[stage].payload;
      batcher = new MicroBatcher(async (jobs) => {
        await this.queue(JOBS[stage].queue).addBulk(
          jobs.map((j) => ({
            name: stage,
            data: payload.parse(j),
            opts: { ...options, jobId: invocationJobId(j.invocation_id) },
          })),
        );
        return jobs.map(() => undefined);
      });
      this.stageBatches.set(stage, batcher);
    }
    return batcher.submit(job);
  }

  private async stageState(stage: InvocationStage, invocationId: string): Promise<JobState> {
    const state = await this.queue(JOBS[stage].queue).getJobState(invocationJobId(invocationId));
    if (state === 'unknown') return 'gone';
    return ALIVE.has(state) ? 'alive' : 'ended';
  }

  private async requeue(stage: InvocationStage, job: InvocationJob): Promise<void> {
    const queue = this.queue(JOBS[stage].queue);
    const old = await queue.getJob(invocationJobId(job.invocation_id));
    if (old && !ALIVE.has(await old.getState())) await old.remove();
    await this.enqueueStage(stage, job);
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
