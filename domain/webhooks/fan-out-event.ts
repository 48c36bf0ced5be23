import type { Clock } from '../clock';
import { newId } from '../ids';
import type { WebhookEventType } from './webhook-publisher';
import type { DeliveryQueue, DeliveryStore, NewDelivery, Subscription } from './webhook-store.port';

export interface FanOutDeps {
  deliveries: DeliveryStore;
  queue: DeliveryQueue;
  clock: Clock;
}

/**
 * One delivery per webhook of the org subscribed to `type` (among its live `subscriptions`), each
 * run by its own job. Answers how many deliveries it made.
 */
export async function fanOutEvent(
  deps: FanOutDeps,
  subscriptions: Subscription[],
  orgId: string,
  type: WebhookEventType,
  data: Record<string, unknown>,
): Promise<number> {
  const subscribed = subscriptions.filter((s) => s.events.includes(type));
  if (subscribed.length === 0) return 0;
  // Plain JSON from here on (dates as ISO text): what is stored is what every attempt sends.
  const json: unknown = JSON.parse(JSON.stringify(data));
  const createdAt = deps.clock.now();
  const deliveries: NewDelivery[] = subscribed.map((s) => ({
    id: newId('msg'),
    orgId,
    webhookId: s.webhookId,
    type,
    data: json,
    createdAt,
  }));
  await deps.deliveries.addDeliveries(deliveries);
  await Promise.all(deliveries.map((d) => deps.queue.enqueue(d)));
  return deliveries.length;
}
