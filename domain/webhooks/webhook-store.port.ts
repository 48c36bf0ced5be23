import type { AuditEvent } from '../audit/audit-event';
import type { Page, PageRequest } from '../model';
import type { SealedSecret } from '../ports';
import type { DeliveryStatus, Webhook, WebhookDelivery } from './webhook';
import type { WebhookEventType } from './webhook-events';

/** The org's webhooks, as the API manages them. Deleted webhooks are not found. */
export interface WebhookStore {
  /**
   * Stores the webhook with its sealed secret and records `event`, in one transaction, unless the
   * org already has `most` live webhooks (counted under a lock on the org): then false, and nothing
   * is stored.
   */
  create(webhook: Webhook, secret: SealedSecret, event: AuditEvent, most: number): Promise<boolean>;
  get(orgId: string, id: string): Promise<Webhook | null>;
  /** Newest first. */
  list(orgId: string, page: PageRequest): Promise<Page<Webhook>>;
  /**
   * Marks a live webhook deleted, destroys its secret, ends its pending deliveries as failed and
   * records `event(webhook)`, in one transaction; null when there is no such live webhook.
   */
  delete(orgId: string, id: string, at: Date, event: (w: Webhook) => AuditEvent): Promise<Webhook | null>;
  /** The webhook's deliveries, newest first. */
  deliveries(orgId: string, webhookId: string, page: PageRequest): Promise<Page<WebhookDelivery>>;
}

/** A live webhook's signing secret as stored, for resealing it under a new master key. */
export interface StoredWebhookSecret {
  webhook: Pick<Webhook, 'orgId' | 'id' | 'url'>;
  secret: SealedSecret;
}

/** Webhook secrets sealed under an earlier master key (`npm run master-key:reseal`). */
export interface WebhookSecretStore {
  /**
   * Locks up to `limit` live webhooks whose secret is sealed under a key other than `keyId`
   * (SKIP LOCKED), and saves what `reseal` makes of each with its audit event, in one
   * transaction; returns how many it resealed. A throw from `reseal` rolls the batch back.
   */
  resealBatch(
    keyId: string,
    limit: number,
    reseal: (stored: StoredWebhookSecret) => { secret: SealedSecret; event: AuditEvent },
  ): Promise<number>;
}

export interface NewDelivery {
  id: string;
  orgId: string;
  webhookId: string;
  type: WebhookEventType;
  /** The event's `data`, as JSON. */
  data: unknown;
  createdAt: Date;
}

/** What one attempt needs: the delivery, where it goes and the key to sign with. */
export interface DeliveryTarget {
  delivery: WebhookDelivery;
  data: unknown;
  url: string;
  /** Null once the webhook was deleted: nothing is sent any more. */
  secret: SealedSecret | null;
}

export interface AttemptRecord {
  at: Date;
  /** What the delivery is after this attempt. */
  status: DeliveryStatus;
  statusCode: number | null;
  error: string | null;
}

/** Deliveries, as the feed creates them and the delivery job works through them. */
export interface DeliveryStore {
  addDeliveries(deliveries: NewDelivery[]): Promise<void>;
  target(orgId: string, deliveryId: string): Promise<DeliveryTarget | null>;
  /**
   * Counts an attempt about to be sent, before it is: one cut off by a crash still counts, since
   * its receiver may have had it. False when the delivery is no longer pending.
   */
  startAttempt(orgId: string, deliveryId: string): Promise<boolean>;
  /** Records how an attempt went, on a delivery still pending; false when it no longer is (deleted meanwhile). */
  recordAttempt(orgId: string, deliveryId: string, attempt: AttemptRecord): Promise<boolean>;
  /** Ends a pending delivery as failed without an attempt (it cannot be sent). */
  end(orgId: string, deliveryId: string, error: string): Promise<void>;
  /** Pending deliveries created before `before`, by id after `after` (a page of `limit`). */
  pendingBefore(
    before: Date,
    after: string | null,
    limit: number,
  ): Promise<Pick<NewDelivery, 'id' | 'orgId' | 'webhookId'>[]>;
  /** Deletes up to `limit` delivered or failed deliveries created before `before`, oldest first; returns how many. */
  deleteEndedBefore(before: Date, limit: number): Promise<number>;
}

/** Hands a delivery to the queue that runs its attempts; its job id is the delivery id. */
export interface DeliveryQueue {
  enqueue(delivery: Pick<NewDelivery, 'id' | 'orgId' | 'webhookId'>): Promise<void>;
  /** Whether the delivery's job may still run: it is waiting, delayed or running (not finished). */
  has(deliveryId: string): Promise<boolean>;
  /** Enqueues a delivery again, replacing a job of it that finished without delivering it. */
  requeue(delivery: Pick<NewDelivery, 'id' | 'orgId' | 'webhookId'>): Promise<void>;
  /**
   * Runs now the jobs of these deliveries that are waiting out a delay, and leaves the others as
   * they are; returns the deliveries whose job is gone (removed, or finished).
   */
  wake(deliveryIds: string[]): Promise<string[]>;
}
