import { z } from 'zod';
import { APPROVAL_STATUSES } from '../../domain/approvals/approval';
import { pageQuery, timestamp } from './common';
import { Reason } from './invocations.schemas';

const id = z.string().max(100);

export const ApprovalQuery = z
  .object({
    status: z.enum(APPROVAL_STATUSES).optional(),
    agent_id: id.optional(),
    session_id: id.optional(),
    policy_id: id.optional().meta({ description: 'Approvals this policy asked for.' }),
    ...pageQuery,
  })
  .strict();

export const VoteBody = z
  .object({ comment: z.string().max(2000).optional().meta({ description: 'Kept with the vote.' }) })
  .strict();

const Actor = z.object({ type: z.enum(['api_key', 'user', 'system']), id: z.string() });

const Message = z.object({ role: z.string(), content: z.string() });

export const ApprovalView = z
  .object({
    id: z.string(),
    status: z.enum(APPROVAL_STATUSES).meta({
      description:
        'expired from expires_at on, even before the service has recorded it (resolved_at is null until it has)',
    }),
    invocation_id: z.string(),
    session_id: z.string(),
    agent_id: z.string().nullable(),
    policy_id: z.string().meta({ description: 'The policy whose require_approval rule asked.' }),
    policy_version: z
      .number()
      .int()
      .meta({ description: "The org's policy_version the verdict was decided under." }),
    request_digest: z.string().meta({
      description:
        'SHA-256 (hex) of the canonical JSON of the request that will run (model, credential_ref, messages, ' +
        'max_tokens, temperature, tool, tools, tool_choice), after redactions and clamps. A resumed invocation runs only if its ' +
        'request still has this digest (otherwise it fails with approval_mismatch).',
    }),
    summary: z.object({
      model: z.string(),
      provider: z.string(),
      credential_ref: z.string(),
      max_tokens: z.number().int(),
      tool: z.object({ name: z.string(), arguments: z.unknown() }).nullable(),
      estimated_cost_usd: z.number().meta({ description: 'The worst case the call is reserved at.' }),
      reasons: z.array(Reason),
      messages: z.array(Message).optional().meta({
        description:
          'The messages exactly as they would be sent (redactions applied). Only on GET /v1/approvals/{id}.',
      }),
      tools: z
        .array(z.unknown())
        .optional()
        .meta({
          description:
            'The function tools the request offers the model (Chat Completions `tools`), exactly as they would ' +
            'be sent (redactions applied). Only on GET /v1/approvals/{id}, and only when the request offers tools.',
        }),
      tool_choice: z
        .unknown()
        .optional()
        .meta({
          description:
            "The request's Chat Completions `tool_choice`, as it would be sent. Only on GET /v1/approvals/{id}, " +
            'and only when the request has one.',
        }),
    }),
    requested_by: Actor.meta({ description: 'The identity that requested the invocation; it cannot vote.' }),
    approvers_required: z.number().int(),
    votes: z.array(
      z.object({
        by: Actor,
        decision: z.enum(['approve', 'reject']),
        comment: z.string().nullable(),
        at: timestamp,
      }),
    ),
    created_at: timestamp,
    expires_at: timestamp,
    resolved_at: timestamp.nullable(),
  })
  .meta({ id: 'Approval' });
