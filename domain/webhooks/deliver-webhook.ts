import type { Clock } from '../clock';
import type { SealedSecret, SecretSealer } from '../ports';
import { mayRetry } from './retry-schedule';
import { signatureHeaders } from './sign';
import { WEBHOOK_DELETED, webhookSealingContext, type DeliveryStatus, type WebhookDelivery } from './webhook';
import type { DeliveryStore, DeliveryTarget } from './webhook-store.port';

/** The body of every delivery (the Standard Webhooks envelope). */
export interface DeliveryEnvelope {
  type: string;
  id: string;
  created_at: string;
  data: unknown;
}

/** The status the receiver answered, or a short reason none came (timeout, refused, blocked). */
export type SendResult = { status: number } | { status: null; error: string };

/** POSTs deliveries to receivers. */
export interface WebhookSender {
  /**
   * Sends exactly `JSON.stringify(envelope)` (the text the signature covers) with `headers`,
   * follows no redirect and gives up after `timeoutMs`. Never throws.
   */
  post(
    url: string,
    headers: Record<string, string>,
    envelope: DeliveryEnvelope,
    timeoutMs: number,
  ): Promise<SendResult>;
}

export interface DeliveryDeps {
  deliveries: DeliveryStore;
  sealer: SecretSealer;
  sender: WebhookSender;
  clock: Clock;
  /** CP_WEBHOOK_BACKOFF_MS: the first wait between attempts (the queue doubles it). */
  backoffMs: number;
  timeoutMs: number;
}

export type DeliveryOutcome = 'delivered' | 'failed' | 'skipped';

/** The store keeps at most this much of a reason. */
const MAX_ERROR = 200;

/** Thrown so the queue runs the delivery's job again after its backoff. */
export class RetryDelivery extends Error {
  constructor(deliveryId: string, why: string) {
    super(`webhook delivery ${deliveryId} failed (${why}); it will be retried`);
    this.name = 'RetryDelivery';
  }
}

const envelopeOf = (t: DeliveryTarget): DeliveryEnvelope => ({
  type: t.delivery.type,
  id: t.delivery.id,
  created_at: t.delivery.createdAt.toISOString(),
  data: t.data,
});

/** The signing secret, or null when it no longer opens (its master key was dropped from the keyring). */
function openSecret(deps: DeliveryDeps, t: DeliveryTarget & { secret: SealedSecret }): string | null {
  const { orgId, webhookId } = t.delivery;
  try {
    return deps.sealer.open(t.secret, webhookSealingContext({ orgId, id: webhookId, url: t.url }));
  } catch {
    return null;
  }
}

async function end(deps: DeliveryDeps, d: WebhookDelivery, why: string): Promise<DeliveryOutcome> {
  await deps.deliveries.end(d.orgId, d.id, why);
  return 'failed';
}

const isSuccess = (status: number | null): boolean => status !== null && status >= 200 && status < 300;

/** Why an attempt failed, in a few words: the status text only, never what the receiver wrote. */
const failureOf = (result: SendResult): string =>
  (result.status === null ? result.error : `receiver answered ${result.status}`).slice(0, MAX_ERROR);

/**
 * One attempt at a delivery. A 2xx answer delivers it; anything else is recorded and retried
 * (by throwing RetryDelivery) while the next attempt still falls inside its 24 hours, after
 * which it is `failed`. A delivery no longer pending (done, or its webhook deleted) is skipped.
 */
export async function deliverWebhook(
  deps: DeliveryDeps,
  job: { deliveryId: string; orgId: string },
  attempt: { number: number; max: number },
): Promise<DeliveryOutcome> {
  const target = await deps.deliveries.target(job.orgId, job.deliveryId);
  if (!target || target.delivery.status !== 'pending') return 'skipped';
  const { delivery } = target;
  // Made just as its webhook was deleted (the delete ended those pending before it): never sent.
  if (!target.secret) return end(deps, delivery, WEBHOOK_DELETED);
  const secret = openSecret(deps, { ...target, secret: target.secret });
  if (secret === null) return end(deps, delivery, 'the signing secret does not open (master key removed?)');
  if (!(await deps.deliveries.startAttempt(job.orgId, delivery.id))) return 'skipped';
  const envelope = envelopeOf(target);
  const sentAt = deps.clock.now();
  const headers = signatureHeaders(secret, delivery.id, sentAt, JSON.stringify(envelope));
  const result = await deps.sender.post(target.url, headers, envelope, deps.timeoutMs);
  const at = deps.clock.now();
  const record = (status: DeliveryStatus, error: string | null) =>
    deps.deliveries.recordAttempt(job.orgId, delivery.id, { at, status, statusCode: result.status, error });

  if (isSuccess(result.status)) {
    await record('delivered', null);
    return 'delivered';
  }
  const why = failureOf(result);
  const retry =
    attempt.number < attempt.max && mayRetry(delivery.createdAt, at, attempt.number, deps.backoffMs);
  const stillPending = await record(retry ? 'pending' : 'failed', why);
  if (!retry || !stillPending) return 'failed';
  throw new RetryDelivery(delivery.id, why);
}
