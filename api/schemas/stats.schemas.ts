import { z } from 'zod';
import { GROUP_BY, MAX_USAGE_GROUPS } from '../../domain/stats/usage-stats';
import { isoInput, timestamp } from './common';

export const UsageQuery = z
  .object({
    from: isoInput.optional().meta({ description: 'Inclusive; default 30 days before `to`.' }),
    to: isoInput
      .optional()
      .meta({ description: 'Exclusive; default now. The window spans at most 366 days.' }),
    group_by: z
      .enum(GROUP_BY)
      .optional()
      .meta({
        description: `One group per distinct value, at most ${MAX_USAGE_GROUPS} (the costliest; see \`groups_truncated\`).`,
      }),
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
    totals: z.object(Figures).meta({ description: 'Over every invocation in the window, every group.' }),
    groups: z
      .array(
        z.object({
          key: z.string().meta({
            description:
              'UTC day (YYYY-MM-DD), agent id ("none" without one), model, session id or key/user id.',
          }),
          ...Figures,
        }),
      )
      .meta({
        description: `Sorted by key; empty without \`group_by\`. At most ${MAX_USAGE_GROUPS}: beyond that, the ${MAX_USAGE_GROUPS} with the highest cost (ties: most calls, then key ascending).`,
      }),
    groups_truncated: z.boolean().meta({
      description: `The window has more than ${MAX_USAGE_GROUPS} groups: \`groups\` holds the costliest, \`totals\` still covers them all.`,
    }),
  })
  .meta({
    id: 'UsageStats',
    description:
      "Invocations that finished in [from, to): the same charges their sessions were settled with, so totals equal the sum of the sessions' usage.",
  });
