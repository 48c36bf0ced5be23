import { MAX_URL_LENGTH } from '../../domain/credentials/provider-host';
import { z } from 'zod';
import { DELIVERY_STATUSES } from '../../domain/webhooks/webhook';
import { WEBHOOK_EVENT_TYPES } from '../../domain/webhooks/webhook-events';
import { timestamp } from './common';

const eventType = z.enum(WEBHOOK_EVENT_TYPES);

export const CreateWebhookBody = z
  .object({
    url: z
      .string()
      .max(MAX_URL_LENGTH)
      .meta({
        description:
          'Where deliveries are POSTed. https for public hosts; loopback and private addresses only ' +
          'when CP_ALLOW_PRIVATE_WEBHOOK_HOSTS=true (the provider base_url guard, with its own opt-in).',
      }),
    events: z
      .array(eventType)
      .min(1)
      .max(20)
      .meta({ description: 'The event types to deliver (duplicates count once).' }),
    description: z.string().trim().max(500).nullable().optional(),
  })
  .strict();

export const WebhookView = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(eventType),
    description: z.string().nullable(),
    created_at: timestamp,
  })
  .meta({ id: 'Webhook' });

export const WebhookWithSecret = WebhookView.extend({
  secret: z.string().meta({
    description:
      'The signing secret, "whsec_" + base64 of 32 bytes: shown in this answer only. Verify each ' +
      'delivery\'s webhook-signature "v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">" ' +
      'keyed with the base64-decoded part after "whsec_".',
  }),
}).meta({ id: 'WebhookWithSecret' });

export const WebhookDeliveryView = z
  .object({
    id: z.string().meta({ description: 'The webhook-id header, the same on every attempt' }),
    type: eventType,
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int().meta({
      description:
        'Attempts started: each is counted just before it is sent, so one cut off by a crash (which its receiver may have had) counts too',
    }),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: timestamp,
    last_attempt_at: timestamp.nullable(),
    delivered_at: timestamp.nullable(),
  })
  .meta({ id: 'WebhookDelivery' });
