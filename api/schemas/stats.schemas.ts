import { z } from 'zod';
import { GROUP_BY } from '../../domain/stats/usage-stats';
import { isoInput, timestamp } from './common';

export const UsageQuery = z
  .object({
    from: isoInput.optional().meta({ description: 'Inclusive; default 30 days before `to`.' }),
    to: isoInput
      .optional()
      .meta({ description: 'Exclusive; default now. The window spans at most 366 days.' }),
    group_by: z.enum(GROUP_BY).optional(),
  })
  .strict();

const Figures = {
  calls: z.number().int().meta({
    description:
      "Provider calls charged, as a session's usage counts them: every request the provider received, so an invocation retried three times counts three.",
  }),
  succeeded: z.number().int(),
  failed: z.number().int(),
  denied: z.number().int(),
  cancelled: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  cost_usd: z.number(),
};

export const UsageView = z
  .object({
    from: timestamp,
    to: timestamp,
    totals: z.object(Figures),
    groups: z.array(
      z.object({
        key: z.string().meta({
          description:
            'UTC day (YYYY-MM-DD), agent id ("none" without one), model, session id or key/user id.',
        }),
        ...Figures,
      }),
    ),
  })
  .meta({
    id: 'UsageStats',
    description:
      "Invocations that finished in [from, to): the same charges their sessions were settled with, so totals equal the sum of the sessions' usage.",
  });
