import { Queue } from 'bullmq';
import { DEFAULT_JOB_OPTIONS, JOBS, type JobName, type JobPayload, type QueueName } from '../../domain/jobs';
import { bullConnectionOptions } from '../redis/connections';

/** Producers for every queue, with job options set in one place (domain/jobs.ts). */
export class JobQueues {
  private readonly queues = new Map<QueueName, Queue>();

  constructor(
    private readonly redisUrl: string,
    readonly bullPrefix: string,
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

  async enqueue<N extends JobName>(name: N, payload: JobPayload<N>, jobId?: string): Promise<void> {
    const spec = JOBS[name];
    await this.queue(spec.queue).add(name, spec.payload.parse(payload), jobId ? { jobId } : {});
  }

  /** Periodic jobs, as BullMQ Job Schedulers (upserted, so every replica may call this). */
  async ensureSchedules(): Promise<void> {
    for (const [name, spec] of Object.entries(JOBS)) {
      await this.queue(spec.queue).upsertJobScheduler(name, { every: spec.everyMs }, { name, data: {} });
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
  }
}
