import type { Job } from 'bullmq';
import type { WebhookJob } from '../domain/jobs';
import { deliverWebhook } from '../domain/webhooks/deliver-webhook';
import { inOrgSlot } from '../domain/webhooks/org-delivery-slots';
import { requeueLostDeliveries } from '../domain/webhooks/requeue-lost-deliveries';
import { pruneDeliveries } from '../domain/webhooks/prune-deliveries';
import { retryDelayMs } from '../domain/webhooks/retry-schedule';
import type { Infra } from '../infra/container';
import { deliveryJobs } from '../infra/webhooks/queued-webhook-publisher';
import type { JobInfo } from './invocation-processors';

/** Why a delivery whose window ended while it waited for its org's slot is `failed`. */
export const NO_SLOT_IN_WINDOW =
  'its 24 hours ended while it waited for a slot: its org was at its cap of deliveries in flight';

/**
 * One attempt at a webhook delivery, in one of its org's slots; a failed one that may be retried
 * throws (RetryDelivery), and one whose org has no slot for it yet throws OrgAtCapacity (the
 * worker puts it back in the queue for a moment, which is not an attempt). A delivery that waited
 * for a slot its whole window is `failed`.
 */
export const webhookProcessor = (payload: WebhookJob, infra: Infra, job: JobInfo) => {
  const { org_id: orgId, delivery_id: deliveryId } = payload;
  const deliveries = infra.webhookStore;
  return inOrgSlot(
    infra.webhookSlots,
    infra.clock.now().getTime(),
    { orgId, jobId: job.id, queuedAt: job.queuedAt, deferrals: job.deferrals },
    {
      deliver: () =>
        deliverWebhook(
          {
            deliveries,
            sealer: infra.webhookSealer,
            sender: infra.webhookSender,
            clock: infra.clock,
            backoffMs: infra.config.CP_WEBHOOK_BACKOFF_MS,
            timeoutMs: infra.config.CP_WEBHOOK_TIMEOUT_MS,
          },
          { deliveryId, orgId },
          { number: job.attemptsMade + 1, max: job.attempts },
        ),
      tooLate: async () => {
        await deliveries.end(orgId, deliveryId, NO_SLOT_IN_WINDOW);
        return 'failed' as const;
      },
      wake: (next) => deliveryJobs(infra.queues).wake(next),
      onError: (err) =>
        infra.logger.warn(
          { err },
          'could not give back a webhook slot or wake the next delivery; it lapses by itself',
        ),
    },
  );
};

/** The queue's wait before the next attempt, from the job's base delay (CP_WEBHOOK_BACKOFF_MS). */
export const webhookBackoff = (attemptsMade: number, job: Pick<Job, 'opts'> | undefined): number =>
  retryDelayMs(attemptsMade, (job?.opts.backoff as { delay?: number } | undefined)?.delay ?? 5000);

/** The hourly deletion of deliveries past their retention. */
export const pruneWebhookDeliveries = (infra: Infra) =>
  pruneDeliveries({
    deliveries: infra.webhookStore,
    clock: infra.clock,
    retentionDays: infra.config.CP_WEBHOOK_DELIVERY_RETENTION_DAYS,
  });

/** The sweep of deliveries whose job was lost. */
export const sweepWebhooks = (infra: Infra) =>
  requeueLostDeliveries({
    deliveries: infra.webhookStore,
    queue: deliveryJobs(infra.queues),
    clock: infra.clock,
  });
