import { z } from 'zod';
import type { AppliesTo, Rule } from '../../domain/policy/policy';
import type { PolicyFields } from '../../domain/policy/policy-use-cases';
import { isWholeMicros } from '../../domain/pricing/cost';
import {
  MAX_LIST_ITEMS,
  MAX_PATTERN_LENGTH,
  MAX_ORG_LIST_ITEMS,
  MAX_ORG_PATTERN_PROGRAM,
  MAX_POLICIES_PER_ORG,
  MAX_RULES_PER_POLICY,
  validatePattern,
  validateRedaction,
} from '../../domain/policy/limits';
import { PREVIEW_MAX_ACTIONS, PREVIEW_MAX_EXAMPLES } from '../../domain/policy/preview-policy';
import { modelName } from './agents.schemas';
import { isoInput, notRoundedToZero, ROUNDS_TO_ZERO, timestamp } from './common';

/** Every list of a policy: present means non-empty (an empty list would match nothing, silently). */
const list = <T extends z.ZodType>(item: T) => z.array(item).min(1).max(MAX_LIST_ITEMS);
const name = z.string().trim().min(1).max(100);
const models = list(modelName).meta({
  description:
    'Model names. In deny_models, applies_to and require_approval.when, a listed alias (a name without a date: gpt-4o-mini, claude-3-5-haiku-latest, claude-opus-4-0) also covers its dated snapshots (gpt-4o-mini-2024-07-18, claude-3-5-haiku-20241022, claude-opus-4-20250514); a listed snapshot covers only itself. allow_models_only is exact: list every snapshot it allows.',
});
const tools = list(name).meta({
  description:
    "Tool names. An action involves a tool when it is the action's `tool`, a function tool an invoke offers the model (Chat Completions `tools`), or a tool called in its messages (`tool_calls`); the list matches when any of them is on it.",
});

const usd = z
  .number()
  .positive()
  .max(1_000_000)
  .refine(isWholeMicros, 'at most six decimals (money is kept in micro-dollars)')
  .refine(notRoundedToZero, ROUNDS_TO_ZERO);

/** A regex for the linear-time engine, checked by `problemOf` (null when it is usable). */
const regex = (problemOf: (pattern: string) => string | null, description: string) =>
  z
    .string()
    .min(1)
    .max(MAX_PATTERN_LENGTH)
    .superRefine((p, ctx) => {
      if (p.length > MAX_PATTERN_LENGTH) return; // `max` has said so: one problem, said once
      const problem = problemOf(p);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .meta({ description });

/** RE2 syntax, so no backreferences or lookaround. */
const pattern = regex(
  (p) => validatePattern(p),
  `RE2 syntax (linear time), at most ${MAX_PATTERN_LENGTH} characters. Matched against every message's content and the arguments of every tool call in the messages.`,
);

/** A redaction's pattern: as `pattern`, and never matching empty text. */
const redactPattern = regex(
  validateRedaction,
  `As a deny_pattern's pattern, and it must not match empty text (such as a*, \\b or ^), where the replacement would be inserted between every character.`,
);

const flags = z
  .string()
  .max(3)
  .regex(/^(?!.*(.).*\1)[ims]*$/, 'only i, m and s, each at most once')
  .meta({ description: 'i: case-insensitive, m: ^ and $ match at line breaks, s: . matches a line break.' });

const rule = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ type: z.literal(type), ...shape }).strict();

export const RuleBody = z.discriminatedUnion('type', [
  rule('deny_models', { models }),
  rule('allow_models_only', { models }),
  rule('deny_tools', { tools }),
  rule('deny_pattern', { pattern, flags: flags.optional() }),
  rule('redact_pattern', { pattern: redactPattern, replacement: z.string().max(MAX_PATTERN_LENGTH) }),
  rule('max_tokens', {
    limit: z.number().int().min(1).max(1_000_000).meta({ description: 'Clamps max_tokens down to it.' }),
  }),
  rule('max_cost_per_call_usd', { limit: usd }),
  rule('require_approval', {
    when: z
      .object({ models: models.optional(), tools: tools.optional(), min_estimated_cost_usd: usd.optional() })
      .strict()
      .default({})
      .meta({ description: 'Every condition given must hold; none given: every action it applies to.' }),
    approvers_required: z.number().int().min(1).max(20).default(1),
    timeout_seconds: z.number().int().min(1).max(604_800).default(3600),
  }),
]);

const AppliesTo = z
  .object({
    agent_ids: list(z.string().min(1).max(100)).optional(),
    models: models.optional(),
    action_types: list(z.string().trim().min(1).max(100)).optional(),
    tools: tools.optional(),
  })
  .strict()
  .meta({ description: 'Every list given must match the action; an absent list matches every action.' });

export const PolicyBody = z
  .object({
    name,
    description: z.string().max(2000).nullable().optional(),
    enabled: z.boolean().default(true),
    priority: z
      .number()
      .int()
      .min(-1000)
      .max(1000)
      .default(0)
      .meta({ description: 'Higher first when reasons are listed; verdict precedence ignores it.' }),
    mode: z
      .enum(['enforce', 'shadow'])
      .default('enforce')
      .meta({ description: 'shadow: evaluated and recorded (shadow_reasons), never changes a verdict.' }),
    applies_to: AppliesTo.default({}),
    rules: z.array(RuleBody).min(1).max(MAX_RULES_PER_POLICY),
  })
  .strict()
  .meta({
    description:
      `At most ${MAX_RULES_PER_POLICY} rules, ${MAX_LIST_ITEMS} items per list and ${MAX_PATTERN_LENGTH} ` +
      `characters per pattern; an org has at most ${MAX_POLICIES_PER_ORG} policies, and the patterns of its ` +
      `enabled policies compile to at most ${MAX_ORG_PATTERN_PROGRAM} instructions together (about 65 of the ` +
      'largest patterns, thousands of plain ones; a change that does not add to them is taken even above it), ' +
      `and their lists hold at most ${MAX_ORG_LIST_ITEMS} items together (the same way) ` +
      '(beyond: 400 validation_error).',
  });

/**
 * PUT's body: a policy's fields, and what GET shows of it besides, so that a policy read can be
 * edited and sent back as it is (QA). `version`, if given, is the version the change was made
 * from; the fields the service keeps (id, dates, policy_version) are checked or ignored.
 */
export const ReplacePolicyBody = PolicyBody.extend({
  id: z.string().max(100).optional().meta({ description: "Read-only: if given, the path's id." }),
  version: z
    .number()
    .int()
    .min(1)
    .optional()
    .meta({
      description:
        'The version the change was made from: a policy at another version (changed since it was read) is not ' +
        'overwritten: 409 conflict. Left out, the change is made whatever the version.',
    }),
  created_at: z.string().max(64).optional().meta({ description: 'Read-only: ignored.' }),
  updated_at: z.string().max(64).optional().meta({ description: 'Read-only: ignored.' }),
  policy_version: z.number().int().optional().meta({ description: 'Read-only: ignored.' }),
}).strict();

export const PolicyView = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    enabled: z.boolean(),
    priority: z.number().int(),
    mode: z.enum(['enforce', 'shadow']),
    applies_to: AppliesTo,
    rules: z.array(RuleBody),
    version: z.number().int().meta({ description: "The policy's own revision: 1, then + 1 per change." }),
    created_at: timestamp,
    updated_at: timestamp,
    policy_version: z
      .number()
      .int()
      .meta({
        description:
          "The org's policy_version (each policy change adds 1): on POST and PUT the version after the " +
          'change; on GET, of one policy or a list, the current one, read in the same statement as the policies shown.',
      }),
  })
  .meta({ description: 'A policy of the org.' });

export const PolicyPreviewBody = z
  .object({
    policy: PolicyBody,
    since: isoInput.meta({ description: 'Inclusive: invocations created at or after it.' }),
    until: isoInput.optional().meta({ description: 'Exclusive; now when absent. Must be after since.' }),
  })
  .strict()
  .meta({
    description:
      'policy: the draft, a body exactly as for POST /v1/policies. ' +
      `Replays at most ${PREVIEW_MAX_ACTIONS} recorded invocations, oldest first. Limitation: an ` +
      'invocation the guardian modified (a redaction, a clamp) is recorded, and replayed, as modified: ' +
      'the original request is not kept. Only the org policies are replayed, not the agent record checks.',
  });

const verdict = z.enum(['allow', 'deny', 'modify', 'require_approval']);

export const PolicyPreviewView = z
  .object({
    since: timestamp,
    until: timestamp,
    actions_replayed: z.number().int(),
    truncated: z.boolean().meta({
      description: `More than ${PREVIEW_MAX_ACTIONS} invocations in the window: the oldest were replayed.`,
    }),
    changed: z.object({
      total: z.number().int(),
      by_verdict: z
        .record(z.string(), z.number().int())
        .meta({ description: 'Keyed "before->after", e.g. "allow->deny"; only pairs that occurred.' }),
    }),
    examples: z
      .array(z.object({ invocation_id: z.string(), before: verdict, after: verdict }))
      .max(PREVIEW_MAX_EXAMPLES)
      .meta({ description: `The first ${PREVIEW_MAX_EXAMPLES} changed invocations, oldest first.` }),
  })
  .meta({ description: 'How many verdicts the draft would have changed over the window.' });

/** A rule as the API takes it (snake_case, defaults applied) to the domain's rule. */
function toRule(body: z.infer<typeof RuleBody>): Rule {
  if (body.type !== 'require_approval') return body;
  const { models, tools, min_estimated_cost_usd } = body.when;
  return {
    type: body.type,
    when: {
      ...(models ? { models } : {}),
      ...(tools ? { tools } : {}),
      ...(min_estimated_cost_usd !== undefined ? { minEstimatedCostUsd: min_estimated_cost_usd } : {}),
    },
    approversRequired: body.approvers_required,
    timeoutSeconds: body.timeout_seconds,
  };
}

export function toFields(body: z.infer<typeof PolicyBody>): PolicyFields {
  const a = body.applies_to;
  const appliesTo: AppliesTo = {
    ...(a.agent_ids ? { agentIds: a.agent_ids } : {}),
    ...(a.models ? { models: a.models } : {}),
    ...(a.action_types ? { actionTypes: a.action_types } : {}),
    ...(a.tools ? { tools: a.tools } : {}),
  };
  return {
    name: body.name,
    description: body.description ?? null,
    enabled: body.enabled,
    priority: body.priority,
    mode: body.mode,
    appliesTo,
    rules: body.rules.map(toRule),
  };
}
