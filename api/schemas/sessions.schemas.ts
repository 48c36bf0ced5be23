import { z } from 'zod';
import { isWholeMicros } from '../../domain/pricing/cost';
import { SESSION_TTL_SECONDS } from '../../domain/sessions/session';
import { metadata, notRoundedToZero, pageQuery, ROUNDS_TO_ZERO, timestamp } from './common';
import { DecisionView, InvocationView } from './invocations.schemas';

const id = z.string().min(1).max(100);

export const OpenSessionBody = z
  .object({
    agent_id: id.optional().meta({ description: 'The agent the session is for; its invokes act for it.' }),
    max_cost_usd: z
      .number()
      .positive()
      .refine(isWholeMicros, 'at most six decimals (money is kept in micro-dollars)')
      .refine(notRoundedToZero, ROUNDS_TO_ZERO)
      .meta({
        description:
          'Hard cap on the settled cost, in USD; at most the org cap (CP_MAX_SESSION_COST_USD, default 1000).',
      }),
    max_calls: z
      .number()
      .int()
      .min(1)
      .max(1_000_000_000)
      .optional()
      .meta({ description: 'Hard cap on invokes that reached the provider (no cap when absent).' }),
    max_tokens: z
      .number()
      .int()
      .min(1)
      .max(1_000_000_000_000)
      .optional()
      .meta({ description: 'Hard cap on input plus output tokens over the session (no cap when absent).' }),
    ttl_seconds: z
      .number()
      .int()
      .min(SESSION_TTL_SECONDS.min)
      .max(SESSION_TTL_SECONDS.max)
      .optional()
      .meta({
        description: `Lifetime in seconds (default ${SESSION_TTL_SECONDS.default}); then the session is expired.`,
      }),
    metadata: metadata.optional(),
  })
  .strict();

export const SessionQuery = z
  .object({
    status: z.enum(['open', 'closed', 'expired']).optional(),
    agent_id: id.optional(),
    ...pageQuery,
  })
  .strict();

export const SessionView = z
  .object({
    id: z.string(),
    agent_id: z.string().nullable(),
    status: z.enum(['open', 'closed', 'expired']),
    limits: z.object({
      max_cost_usd: z.number(),
      max_calls: z.number().int().nullable(),
      max_tokens: z.number().int().nullable(),
    }),
    usage: z
      .object({
        cost_usd: z.number(),
        reserved_usd: z.number(),
        calls: z.number().int(),
        input_tokens: z.number().int(),
        output_tokens: z.number().int(),
      })
      .meta({
        description:
          'Settled usage of finished invocations, and the worst case held right now by invocations in flight (reserved_usd).',
      }),
    metadata: z.record(z.string(), z.unknown()),
    created_at: timestamp,
    expires_at: timestamp,
    closed_at: timestamp.nullable(),
  })
  .meta({ id: 'Session' });

export const HistoryItemView = z
  .union([
    z.object({ type: z.literal('invocation'), at: timestamp, invocation: InvocationView }),
    z.object({ type: z.literal('decision'), at: timestamp, decision: DecisionView }),
  ])
  .meta({ id: 'SessionHistoryItem' });

export const HistoryQuery = z.object({ ...pageQuery }).strict();
