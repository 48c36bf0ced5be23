import { Worker } from 'bullmq';
import { JOBS, QUEUES, type JobName, type QueueName } from '../domain/jobs';
import type { Infra } from '../infra/container';
import { bullConnectionOptions } from '../infra/redis/connections';
import { PROCESSORS } from './processors';

export interface RunningWorkers {
  close(): Promise<void>;
}

const isJobName = (name: string): name is JobName => Object.hasOwn(JOBS, name);

function startWorker(queue: QueueName, infra: Infra): Worker {
  const worker = new Worker(
    queue,
    async (job) => {
      if (!isJobName(job.name)) throw new Error(`no processor for job ${job.name}`);
      const payload = JOBS[job.name].payload.parse(job.data);
      return (PROCESSORS[job.name] as (p: typeof payload, i: Infra) => Promise<unknown>)(payload, infra);
    },
    {
      connection: bullConnectionOptions(infra.urls.redisUrl),
      prefix: infra.queues.bullPrefix,
      concurrency: 4,
    },
  );
  worker.on('failed', (job, err) =>
    infra.logger.warn({ job: job?.name, job_id: job?.id, err }, 'job failed'),
  );
  worker.on('error', (err) => infra.logger.error({ err, queue }, 'worker error'));
  return worker;
}

/** Starts one BullMQ worker per queue asked for (all by default) and the periodic jobs. */
export async function startWorkers(
  infra: Infra,
  queues: QueueName[] = Object.values(QUEUES),
): Promise<RunningWorkers> {
  const workers = queues.map((q) => startWorker(q, infra));
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  await infra.queues.ensureSchedules();
  infra.logger.info({ queues }, 'workers ready');
  return {
    // close() waits for jobs in flight; a job cut off by a hard kill is retried by the stalled check.
    close: async () => void (await Promise.all(workers.map((w) => w.close()))),
  };
}
