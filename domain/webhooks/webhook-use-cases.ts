import { newAuditEvent } from '../audit/new-event';
import type { Clock } from '../clock';
import { baseUrlProblem, canonicalUrl } from '../credentials/provider-host';
import { invalidField, notFound } from '../errors';
import { newId } from '../ids';
import type { Page, PageRequest } from '../model';
import type { SecretSealer } from '../ports';
import { actorOf, type CallContext } from '../principal';
import { newWebhookSecret } from './sign';
import { webhookSealingContext, type Webhook, type WebhookDelivery } from './webhook';
import type { WebhookEventType } from './webhook-events';
import type { WebhookStore } from './webhook-store.port';

/**
 * Live webhooks an org may have (Stripe allows 16 endpoints): each is fed the org's audit log after
 * every seal and delivered to on its own, and one may subscribe to every event.
 */
export const MAX_WEBHOOKS_PER_ORG = 20;

export interface WebhookDeps {
  store: WebhookStore;
  sealer: SecretSealer;
  clock: Clock;
  /** CP_ALLOW_PRIVATE_WEBHOOK_HOSTS: the webhooks' own opt-in (not the providers'). */
  allowPrivateHosts: boolean;
}

export interface CreateWebhookInput {
  url: string;
  events: WebhookEventType[];
  description: string | null;
}

const auditEvent = (ctx: CallContext, action: string, w: Webhook, at: Date) =>
  newAuditEvent({
    orgId: w.orgId,
    actor: actorOf(ctx.principal),
    action,
    resource: { type: 'webhook', id: w.id },
    at,
    requestId: ctx.requestId,
    details: { url: w.url, events: w.events, description: w.description },
  });

/**
 * The receiver's URL passes the provider base-URL guard: otherwise an org admin could make the
 * workers POST to the metadata service or anything else inside the network (SSRF). Its opt-in for
 * private hosts is its own: an operator who lets credentials reach a local model server does not
 * let every org's admin probe the network through webhooks (QA).
 */
function checkedUrl(deps: WebhookDeps, url: string): string {
  const problem = baseUrlProblem(url, deps.allowPrivateHosts, 'CP_ALLOW_PRIVATE_WEBHOOK_HOSTS');
  if (problem) throw invalidField('url', `url: ${problem}`);
  return canonicalUrl(url);
}

/** The signing secret is in the answer only: stored sealed, never shown again. */
export async function createWebhook(
  deps: WebhookDeps,
  ctx: CallContext,
  input: CreateWebhookInput,
): Promise<{ webhook: Webhook; secret: string }> {
  const url = checkedUrl(deps, input.url);
  const now = deps.clock.now();
  const webhook: Webhook = {
    id: newId('whk'),
    orgId: ctx.principal.orgId,
    url,
    events: [...new Set(input.events)],
    description: input.description,
    createdAt: now,
  };
  const secret = newWebhookSecret();
  const sealed = deps.sealer.seal(secret, webhookSealingContext(webhook));
  const event = auditEvent(ctx, 'webhook.created', webhook, now);
  if (!(await deps.store.create(webhook, sealed, event, MAX_WEBHOOKS_PER_ORG)))
    throw invalidField(
      'body',
      `the org already has ${MAX_WEBHOOKS_PER_ORG} webhooks, the most it may have: delete one first (one webhook may subscribe to every event)`,
    );
  return { webhook, secret };
}

export async function getWebhook(deps: WebhookDeps, ctx: CallContext, id: string): Promise<Webhook> {
  const webhook = await deps.store.get(ctx.principal.orgId, id);
  if (!webhook) throw notFound('webhook');
  return webhook;
}

export const listWebhooks = (
  deps: WebhookDeps,
  ctx: CallContext,
  page: PageRequest,
): Promise<Page<Webhook>> => deps.store.list(ctx.principal.orgId, page);

/** Its secret is destroyed and its pending deliveries end; its delivery rows stay in the database. */
export async function deleteWebhook(deps: WebhookDeps, ctx: CallContext, id: string): Promise<void> {
  const now = deps.clock.now();
  const deleted = await deps.store.delete(ctx.principal.orgId, id, now, (w) =>
    auditEvent(ctx, 'webhook.deleted', w, now),
  );
  if (!deleted) throw notFound('webhook');
}

export async function listDeliveries(
  deps: WebhookDeps,
  ctx: CallContext,
  webhookId: string,
  page: PageRequest,
): Promise<Page<WebhookDelivery>> {
  const webhook = await getWebhook(deps, ctx, webhookId);
  return deps.store.deliveries(webhook.orgId, webhook.id, page);
}
