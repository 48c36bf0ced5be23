import { z } from 'zod';

export const Health = z.object({ status: z.literal('ok') });
export const Ready = z.object({
  status: z.enum(['ready', 'unavailable']),
  checks: z.object({ database: z.enum(['ok', 'error']), redis: z.enum(['ok', 'error']) }),
});
export const PublicConfig = z.object({
  api_version: z.literal('v1'),
  key_prefix: z.literal('csk_'),
  scopes: z.array(z.string()),
  presets: z.record(z.string(), z.array(z.string())),
  providers: z.array(z.string()),
  limits: z.object({
    max_body_bytes: z.number().int(),
    expires_in_days: z.object({ min: z.number().int(), max: z.number().int(), default: z.number().int() }),
    rate_limit_per_minute: z.number().int().meta({ description: 'Requests a minute per key (or person).' }),
    org_rate_limit_per_minute: z
      .number()
      .int()
      .meta({ description: "Requests a minute of all of one org's keys and people together." }),
    public_rate_limit_per_minute: z.number().int(),
    max_wait_seconds: z.number().int(),
    max_messages: z.number().int(),
    max_session_cost_usd: z.number(),
  }),
});
