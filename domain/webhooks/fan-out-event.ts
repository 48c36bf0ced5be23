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
 * with an id of its own, made once: storing them again is a no-op, so a store that failed can be
 * tried again without a receiver seeing two ids for one event.
 */
export function plannedDeliveries(
  clock: Clock,
  subscriptions: Subscription[],
  orgId: string,
  type: WebhookEventType,
  data: Record<string, unknown>,
): NewDelivery[] {
  const subscribed = subscriptions.filter((s) => s.events.includes(type));
  if (subscribed.length === 0) return [];
  // Plain JSON from here on (dates as ISO text): what is stored is what every attempt sends.
  const json: unknown = JSON.parse(JSON.stringify(data));
  const createdAt = clock.now();
  return subscribed.map((s) => ({
    id: newId('msg'),
    orgId,
    webhookId: s.webhookId,
    type,
    data: json,
    createdAt,
  }));
}

/**
 * Stores the deliveries and runs each by its own job. A job that could not be added is left to
 * the sweep of lost deliveries, which enqueues it again; the store is what must not fail.
 */
export async function fanOut(deps: FanOutDeps, deliveries: NewDelivery[]): Promise<number> {
  if (deliveries.length === 0) return 0;
  await deps.deliveries.addDeliveries(deliveries);
  await Promise.all(deliveries.map((d) => deps.queue.enqueue(d)));
  return deliveries.length;
}
