import type { Job } from 'bullmq';
import { JOBS } from '../../domain/jobs';
import type { DeliveryQueue } from '../../domain/webhooks/webhook-store.port';
import type { JobQueues } from '../queue/job-queues';

/** A job that may still run: it exists and has not finished (completed, or failed for good). */
const live = (job: Job | undefined): boolean => job !== undefined && !job.finishedOn;

/** Each delivery is one `webhook.deliver` job whose id is the delivery id. */
export const deliveryJobs = (queues: JobQueues): DeliveryQueue => {
  const queue = () => queues.queue(JOBS['webhook.deliver'].queue);
  const enqueue: DeliveryQueue['enqueue'] = (d) =>
    queues.enqueue('webhook.deliver', { delivery_id: d.id, org_id: d.orgId, webhook_id: d.webhookId }, d.id);
  return {
    enqueue,
    has: async (id) => live(await queue().getJob(id)),
    requeue: async (d) => {
      // A finished job keeps its id (a failed one is kept for inspection): it must go first.
      await (await queue().getJob(d.id))?.remove();
      await enqueue(d);
    },
    wake: async (ids) => {
      const jobs = await Promise.all(ids.map((id) => queue().getJob(id)));
      // A job already running or waiting is not delayed, and promote() refuses it: nothing to do.
      await Promise.all(jobs.map((job) => (live(job) ? job!.promote().catch(() => undefined) : null)));
      return ids.filter((_, i) => !live(jobs[i]));
    },
  };
};
