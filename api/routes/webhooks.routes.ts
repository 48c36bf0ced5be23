import { z } from 'zod';
import type { Webhook, WebhookDelivery } from '../../domain/webhooks/webhook';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listDeliveries,
  listWebhooks,
  MAX_WEBHOOKS_PER_ORG,
  type WebhookDeps,
} from '../../domain/webhooks/webhook-use-cases';
import type { Infra } from '../../infra/container';
import { callOf } from '../http/call-context';
import { defineRoute, needs } from '../http/route';
import { listOf, pageQuery, pageReply, pageRequest } from '../schemas/common';
import {
  CreateWebhookBody,
  WebhookDeliveryView,
  WebhookView,
  WebhookWithSecret,
} from '../schemas/webhooks.schemas';

const admin = needs('org:admin');
const webhookPath = '/v1/webhooks/{id}';
const notFound = { description: 'no such webhook in this org (or it was deleted)' };

const webhookDeps = (infra: Infra): WebhookDeps => ({
  store: infra.webhookStore,
  sealer: infra.webhookSealer,
  clock: infra.clock,
  allowPrivateHosts: infra.config.CP_ALLOW_PRIVATE_WEBHOOK_HOSTS,
});

const presentWebhook = (w: Webhook) => ({
  id: w.id,
  url: w.url,
  events: w.events,
  description: w.description,
  created_at: w.createdAt.toISOString(),
});

const presentDelivery = (d: WebhookDelivery) => ({
  id: d.id,
  type: d.type,
  status: d.status,
  attempts: d.attempts,
  last_status_code: d.lastStatusCode,
  last_error: d.lastError,
  created_at: d.createdAt.toISOString(),
  last_attempt_at: d.lastAttemptAt?.toISOString() ?? null,
  delivered_at: d.deliveredAt?.toISOString() ?? null,
});

export const webhookRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/webhooks',
    summary: 'Subscribe a URL to events; the signing secret is in the response only',
    tag: 'webhooks',
    access: admin,
    idempotent: true,
    body: CreateWebhookBody,
    responses: {
      201: { description: 'created', schema: WebhookWithSecret },
      400: {
        description: `validation_error: a field is wrong, or the org already has ${MAX_WEBHOOKS_PER_ORG} live webhooks (delete one first; one webhook may subscribe to every event)`,
      },
    },
    handle: async (input) => {
      const { body } = input;
      const { webhook, secret } = await createWebhook(webhookDeps(input.infra), callOf(input), {
        url: body.url,
        events: body.events,
        description: body.description ?? null,
      });
      return { status: 201, body: { ...presentWebhook(webhook), secret } };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/webhooks',
    summary: 'List the live webhooks of the org, newest first (never their secrets)',
    tag: 'webhooks',
    access: admin,
    query: z.object(pageQuery).strict(),
    responses: { 200: { description: 'a page of webhooks', schema: listOf(WebhookView) } },
    handle: async (input) => {
      const page = await listWebhooks(
        webhookDeps(input.infra),
        callOf(input),
        pageRequest(input.query, 'webhooks'),
      );
      return pageReply(page, presentWebhook, 'webhooks');
    },
  }),
  defineRoute({
    method: 'GET',
    path: webhookPath,
    summary: 'Get one webhook (never its secret)',
    tag: 'webhooks',
    access: admin,
    responses: { 200: { description: 'the webhook', schema: WebhookView }, 404: notFound },
    handle: async (input) => {
      const webhook = await getWebhook(webhookDeps(input.infra), callOf(input), input.params.id ?? '');
      return { status: 200, body: presentWebhook(webhook) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: webhookPath,
    summary: 'Delete a webhook: its secret is destroyed and its pending deliveries stop',
    tag: 'webhooks',
    access: admin,
    responses: { 204: { description: 'deleted' }, 404: notFound },
    handle: async (input) => {
      await deleteWebhook(webhookDeps(input.infra), callOf(input), input.params.id ?? '');
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${webhookPath}/deliveries`,
    summary: "The webhook's deliveries, newest first: status, attempts and the last attempt's outcome",
    tag: 'webhooks',
    access: admin,
    query: z.object(pageQuery).strict(),
    responses: {
      200: {
        description:
          'a page of deliveries. One that ended (delivered, or failed) is deleted ' +
          '`CP_WEBHOOK_DELIVERY_RETENTION_DAYS` days (30 unless the operator sets it) after it was ' +
          'created; a pending one stays until it ends',
        schema: listOf(WebhookDeliveryView),
      },
      404: notFound,
    },
    handle: async (input) => {
      const page = await listDeliveries(
        webhookDeps(input.infra),
        callOf(input),
        input.params.id ?? '',
        pageRequest(input.query, 'deliveries'),
      );
      return pageReply(page, presentDelivery, 'deliveries');
    },
  }),
];
