import { z } from 'zod';
import { isoInput, pageQuery, sinceBeforeUntil } from './common';

const id = z.string().max(100);

export const DecisionQuery = z
  .object({
    agent_id: id.optional(),
    session_id: id.optional(),
    verdict: z.enum(['allow', 'deny', 'modify', 'require_approval']).optional(),
    policy_id: id
      .optional()
      .meta({ description: 'Decisions with a reason or a shadow reason from this policy.' }),
    since: isoInput.optional().meta({ description: 'Inclusive.' }),
    until: isoInput.optional().meta({ description: 'Exclusive; after since.' }),
    ...pageQuery,
  })
  .strict()
  .superRefine(sinceBeforeUntil);
