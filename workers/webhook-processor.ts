import type { Job } from 'bullmq';
import type { WebhookJob } from '../domain/jobs';
import { deliverWebhook } from '../domain/webhooks/deliver-webhook';
import { inOrgSlot } from '../domain/webhooks/org-delivery-slots';
import { requeueLostDeliveries } from '../domain/webhooks/requeue-lost-deliveries';
import { pruneDeliveries } from '../domain/webhooks/prune-deliveries';
import { retryDelayMs } from '../domain/webhooks/retry-schedule';
import type { Infra } from '../infra/container';
import { OnceAMinute } from '../infra/logging/once-a-minute';
import { deliveryJobs } from '../infra/webhooks/delivery-jobs';
import { feedWebhooks } from '../domain/webhooks/feed-webhooks';
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
  const webhookId = payload.webhook_id ?? null;
  return inOrgSlot(
    infra.webhookSlots,
    infra.clock.now().getTime(),
    { orgId, jobId: job.id, webhookId, queuedAt: job.queuedAt, deferrals: job.deferrals },
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

/** Each webhook that could not be fed is logged once a minute: the seal runs five times a second. */
const feedFailures = new OnceAMinute();

function logFeedFailure(infra: Infra, err: unknown, webhookId: string): void {
  if (!feedFailures.due(webhookId).log) return;
  infra.logger.error({ err, webhook_id: webhookId }, 'webhook not fed: its events wait in the audit log');
}

/**
 * The `audit.seal` job: the org's new entries are sealed, then each webhook is fed the events they
 * tell of, whether or not every org could be sealed (one that failed fails the job afterwards).
 * A webhook that cannot be fed is logged, at most once a minute each.
 */
export async function feedWebhooksAfterSeal(infra: Infra, sealing: Promise<number>) {
  const sealed = await sealing.then(
    (count) => ({ count }),
    (err: unknown) => ({ err }),
  );
  const fed = await feedWebhooks({
    feed: infra.webhookFeed,
    invocations: infra.invocations,
    approvals: infra.approvals,
    queue: deliveryJobs(infra.queues),
    clock: infra.clock,
    onError: (err, webhookId) => logFeedFailure(infra, err, webhookId),
  });
  if ('err' in sealed) throw sealed.err;
  return { sealed: sealed.count, deliveries: fed };
}
