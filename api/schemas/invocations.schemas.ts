import { z } from 'zod';
import { INVOCATION_STATUSES } from '../../domain/invocations/invocation';
import { MAX_BODY_DEPTH } from '../http/unstorable-input';
import { modelName } from './agents.schemas';
import { metadata, pageQuery, timestamp } from './common';

const id = z.string().min(1).max(100);
const MAX_TOOL_ARGUMENT_BYTES = 16 * 1024;

export const Message = z
  .object({
    role: z.enum(['system', 'user', 'assistant', 'tool']),
    content: z.string(),
  })
  .strict();

export const ToolCall = z
  .object({
    name: z.string().trim().min(1).max(100),
    arguments: z
      .json()
      .refine(
        (a) => Buffer.byteLength(JSON.stringify(a)) <= MAX_TOOL_ARGUMENT_BYTES,
        `at most ${MAX_TOOL_ARGUMENT_BYTES} bytes`,
      )
      .meta({
        description: `Any JSON of at most ${MAX_TOOL_ARGUMENT_BYTES} bytes; the body nests at most ${MAX_BODY_DEPTH} levels.`,
      }),
  })
  .strict();

/**
 * CP_MAX_MESSAGES's own bound, checked before the messages are (the configured limit is checked
 * after): half a million one-byte entries in a body under 1 MiB would otherwise each be parsed
 * and reported, seconds of the event loop for every org.
 */
export const MAX_MESSAGES_BOUND = 10_000;

export const InvokeBody = z
  .object({
    session_id: id,
    model: modelName,
    messages: z
      .array(Message)
      .min(1)
      .max(MAX_MESSAGES_BOUND)
      .meta({ description: 'At most limits.max_messages (GET /v1/config/public; default 256).' }),
    max_tokens: z
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .meta({ description: "The completion's output limit; the worst case reserved counts all of it." }),
    temperature: z.number().min(0).max(2).optional(),
    credential_ref: id
      .optional()
      .meta({ description: "Defaults to the first of the agent's credential_refs." }),
    agent_id: id.optional().meta({ description: "Defaults to the session's agent; may not differ from it." }),
    tool: ToolCall.optional(),
    metadata: metadata.optional(),
  })
  .strict();

/** `wait` in seconds; the handler checks it against max_wait_seconds. */
export const WaitQuery = z
  .object({
    wait: z.coerce
      .number()
      .int()
      .min(0)
      .max(3600)
      .optional()
      .meta({ description: 'Seconds to wait for the invocation to finish (0..limits.max_wait_seconds).' }),
  })
  .strict();

/** Documents the header the wait routes read (RFC 7240); a preference is bounded, never refused. */
export const PreferHeaders = z.object({
  Prefer: z
    .string()
    .optional()
    .meta({
      description:
        'RFC 7240 `wait=N`: waits as the `wait` query does, bounded to limits.max_wait_seconds instead of refused; ' +
        'the answer then carries `Preference-Applied: wait=N`. The `wait` query wins when both are sent.',
    }),
});

export const InvocationQuery = z
  .object({
    session_id: id.optional(),
    status: z.enum(INVOCATION_STATUSES).optional(),
    ...pageQuery,
  })
  .strict();

export const Reason = z.object({
  policy_id: z.string().nullable(),
  code: z.string(),
  message: z.string(),
  rule_index: z
    .number()
    .int()
    .nullable()
    .meta({ description: "The rule's index in its policy's rules; null for built-in checks." }),
});

const ShadowReason = Reason.extend({
  verdict: z
    .enum(['allow', 'deny', 'modify', 'require_approval'])
    .meta({ description: 'What the shadow policy would have decided; it never changes the verdict.' }),
});

export const InvocationView = z
  .object({
    id: z.string(),
    session_id: z.string(),
    agent_id: z.string().nullable(),
    status: z.enum(INVOCATION_STATUSES),
    model: z.string(),
    provider: z.string(),
    credential_ref: z.string(),
    decision: z
      .object({ id: z.string(), verdict: z.string(), reasons: z.array(Reason) })
      .nullable()
      .meta({ description: "The guardian's decision; reasons of built-in checks have policy_id null." }),
    approval_id: z.string().nullable().meta({
      description: 'Set when a require_approval verdict paused it: GET /v1/approvals/{approval_id}.',
    }),
    output: z
      .object({
        role: z.literal('assistant'),
        content: z.string(),
        tool_calls: z
          .array(
            z.object({
              id: z.string(),
              type: z.literal('function'),
              function: z.object({
                name: z.string(),
                arguments: z.string().meta({ description: 'The arguments as JSON text' }),
              }),
            }),
          )
          .optional()
          .meta({ description: 'The tools the model called, when it called any (finish_reason tool_calls)' }),
      })
      .nullable(),
    usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int() }).nullable().meta({
      description:
        "Tokens charged over all provider attempts: an answer's count, capped at the request's bounds (its input bound and max_tokens); an attempt whose outcome is unknown (timeout, lost connection, unreadable 2xx answer) at those bounds.",
    }),
    cost_usd: z.number().meta({
      description:
        'What the session was charged over all provider attempts. Every request the provider received counts against max_calls; an error status it answered costs nothing; an attempt whose outcome is unknown (timeout, lost connection, unreadable 2xx answer) costs its reservation, since the provider may bill it.',
    }),
    error: z
      .object({ error_code: z.string(), message: z.string() })
      .nullable()
      .meta({
        description:
          'Why it failed or was denied: budget_exceeded, credential_not_found, session_not_open, guardian_denied, ' +
          'approval_rejected (a person rejected it), approval_expired (no decision before the approval timed out), ' +
          'approval_mismatch (the request changed after it was approved), ' +
          'invalid_api_key or expired_api_key (the key that asked for it was revoked, or expired, before it reached the provider), ' +
          'provider_* (provider_timeout, provider_unavailable, provider_rate_limited, provider_rejected, ...), ' +
          'worker_lost, unavailable.',
      }),
    created_at: timestamp,
    updated_at: timestamp,
    completed_at: timestamp.nullable(),
  })
  .meta({ id: 'Invocation' });

export const DecisionView = z
  .object({
    id: z.string(),
    verdict: z.enum(['allow', 'deny', 'modify', 'require_approval']),
    reasons: z.array(Reason),
    shadow_reasons: z.array(ShadowReason),
    modified_action: z.record(z.string(), z.unknown()).nullable().meta({
      description:
        "The action after modification, without its messages: the log keeps no prompt text (the invocation runs the modified request). A tool call's arguments are kept as modified, text included.",
    }),
    policy_version: z.number().int(),
    action_digest: z
      .string()
      .nullable()
      .meta({ description: 'SHA-256 (hex) of the canonical JSON (RFC 8785) of the action decided.' }),
    invocation_id: z.string().nullable(),
    agent_id: z.string().nullable(),
    session_id: z.string().nullable(),
    evaluated_at: timestamp,
  })
  .meta({ id: 'Decision' });
