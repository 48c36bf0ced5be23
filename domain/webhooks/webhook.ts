import type { WebhookEventType } from './webhook-events';

/** An org's subscription: events of these types are POSTed, signed, to `url`. */
export interface Webhook {
  id: string;
  orgId: string;
  url: string;
  events: WebhookEventType[];
  description: string | null;
  createdAt: Date;
}

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One event for one webhook: the same `id` (the `webhook-id` header) on every attempt. */
export interface WebhookDelivery {
  id: string;
  orgId: string;
  webhookId: string;
  type: WebhookEventType;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  /** A short reason the last attempt failed; never the receiver's body, never a secret. */
  lastError: string | null;
  createdAt: Date;
  lastAttemptAt: Date | null;
  deliveredAt: Date | null;
}

/**
 * Associated data of a sealed signing secret: it opens only for its own org, webhook and URL, so
 * whoever can write the database but lacks the master key cannot re-point a webhook and have the
 * workers sign for another receiver.
 */
export const webhookSealingContext = (w: Pick<Webhook, 'orgId' | 'id' | 'url'>): string =>
  JSON.stringify(['webhook', 1, w.orgId, w.id, w.url]);

/** The last_error of deliveries that ended because their webhook was deleted. */
export const WEBHOOK_DELETED = 'webhook deleted';
