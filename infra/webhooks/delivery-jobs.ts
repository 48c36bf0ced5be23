import { JOBS } from '../../domain/jobs';
import type { DeliveryQueue } from '../../domain/webhooks/webhook-store.port';
import type { JobQueues } from '../queue/job-queues';

/** Each delivery is one `webhook.deliver` job whose id is the delivery id. */
export const deliveryJobs = (queues: JobQueues): DeliveryQueue => {
  const queue = () => queues.queue(JOBS['webhook.deliver'].queue);
  return {
    enqueue: (d) => queues.enqueue('webhook.deliver', { delivery_id: d.id, org_id: d.orgId }, d.id),
    has: async (id) => (await queue().getJob(id)) !== undefined,
    wake: async (ids) => {
      const jobs = await Promise.all(ids.map((id) => queue().getJob(id)));
      // A job already running or waiting is not delayed, and promote() refuses it: nothing to do.
      await Promise.all(jobs.map((job) => job?.promote().catch(() => undefined)));
    },
  };
};
