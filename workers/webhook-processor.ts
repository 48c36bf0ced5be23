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

/**
 * One attempt at a webhook delivery, in one of its org's slots; a failed one that may be retried
 * throws (RetryDelivery), and one whose org is at its cap throws OrgAtCapacity (the worker puts
 * it back in the queue for a moment, which is not an attempt).
 */
export const webhookProcessor = (payload: WebhookJob, infra: Infra, job: JobInfo) =>
  inOrgSlot(
    infra.webhookSlots,
    { orgId: payload.org_id, jobId: job.id, deferrals: job.deferrals },
    () =>
      deliverWebhook(
        {
          deliveries: infra.webhookStore,
          sealer: infra.webhookSealer,
          sender: infra.webhookSender,
          clock: infra.clock,
          backoffMs: infra.config.CP_WEBHOOK_BACKOFF_MS,
          timeoutMs: infra.config.CP_WEBHOOK_TIMEOUT_MS,
        },
        { deliveryId: payload.delivery_id, orgId: payload.org_id },
        { number: job.attemptsMade + 1, max: job.attempts },
      ),
    (err) => infra.logger.warn({ err }, 'could not give back a webhook delivery slot; it lapses by itself'),
  );

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
