import { newId } from '../../domain/ids';
import type { WebhookEventType } from '../../domain/webhooks/webhook-events';
import type { Infra } from '../../infra/container';
import { deliveryJobs } from '../../infra/webhooks/delivery-jobs';

/**
 * Makes the deliveries of an event, as the feed from the audit log does, for each live webhook of
 * the org subscribed to `type`, and adds their jobs: for tests of delivery itself, with data of
 * the test's own and no invocation or approval behind it.
 */
export async function sendEvent(
  infra: Infra,
  orgId: string,
  type: WebhookEventType,
  data: Record<string, unknown>,
): Promise<void> {
  const hooks: { id: string; events: string[] }[] = await infra
    .knex('webhooks')
    .where({ org_id: orgId })
    .whereNull('deleted_at')
    .select('id', 'events');
  const json: unknown = JSON.parse(JSON.stringify(data));
  const deliveries = hooks
    .filter((h) => h.events.includes(type))
    .map((h) => ({ id: newId('msg'), orgId, webhookId: h.id, type, data: json, createdAt: new Date() }));
  if (deliveries.length === 0) return;
  await infra.webhookStore.addDeliveries(deliveries);
  const jobs = deliveryJobs(infra.queues);
  await Promise.all(deliveries.map((d) => jobs.enqueue(d)));
}
