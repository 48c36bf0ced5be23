import type { DeliveryStatus, Webhook, WebhookDelivery } from '../../domain/webhooks/webhook';
import type { WebhookEventType } from '../../domain/webhooks/webhook-events';

export interface WebhookRow {
  id: string;
  org_id: string;
  url: string;
  events: string[];
  description: string | null;
  created_at: Date;
}

export interface DeliveryRow {
  id: string;
  org_id: string;
  webhook_id: string;
  type: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  last_attempt_at: Date | null;
  delivered_at: Date | null;
}

export const WEBHOOK_COLUMNS = ['id', 'org_id', 'url', 'events', 'description', 'created_at'];

export const DELIVERY_COLUMNS = [
  'id',
  'org_id',
  'webhook_id',
  'type',
  'status',
  'attempts',
  'last_status_code',
  'last_error',
  'created_at',
  'last_attempt_at',
  'delivered_at',
];

export const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  orgId: r.org_id,
  url: r.url,
  events: r.events as WebhookEventType[],
  description: r.description,
  createdAt: new Date(r.created_at),
});

const dateOrNull = (d: Date | null): Date | null => (d === null ? null : new Date(d));

export const toDelivery = (r: DeliveryRow): WebhookDelivery => ({
  id: r.id,
  orgId: r.org_id,
  webhookId: r.webhook_id,
  type: r.type as WebhookEventType,
  status: r.status as DeliveryStatus,
  attempts: Number(r.attempts),
  lastStatusCode: r.last_status_code === null ? null : Number(r.last_status_code),
  lastError: r.last_error,
  createdAt: new Date(r.created_at),
  lastAttemptAt: dateOrNull(r.last_attempt_at),
  deliveredAt: dateOrNull(r.delivered_at),
});
