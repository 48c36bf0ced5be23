import type { ErrorCode } from '../../domain/errors';
import type { InvocationSummary } from '../../domain/invocations/invocation';
import { microsToUsd } from '../../domain/pricing/cost';
import type { Reply } from '../http/route';
import { ERROR_STATUS } from '../http/error-status';
import { NO_RETRY, openAiError } from '../http/openai-errors';

/** The headers every answer about an invocation carries. */
export const invocationHeaders = (i: InvocationSummary): Record<string, string> => ({
  'X-Invocation-Id': i.id,
  'X-Cost-Usd': String(microsToUsd(i.costMicros)),
});

export const usageOf = (i: InvocationSummary) => {
  const prompt = i.usage?.inputTokens ?? 0;
  const completion = i.usage?.outputTokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
};

export const createdOf = (i: InvocationSummary): number => Math.floor(i.createdAt.getTime() / 1000);

export const finishReasonOf = (i: InvocationSummary): string =>
  i.output?.finishReason ?? (i.output?.toolCalls?.length ? 'tool_calls' : 'stop');

/** A finished invocation as a `chat.completion`. */
export const completionOf = (i: InvocationSummary) => ({
  id: i.id,
  object: 'chat.completion' as const,
  created: createdOf(i),
  model: i.model,
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant' as const,
        content: i.output?.toolCalls?.length && !i.output.content ? null : (i.output?.content ?? ''),
        ...(i.output?.toolCalls?.length ? { tool_calls: i.output.toolCalls } : {}),
      },
      finish_reason: finishReasonOf(i),
    },
  ],
  usage: usageOf(i),
});

/**
 * An invocation that did not succeed, as an OpenAI error with the contract's status and code:
 * a guardian deny is 403 with its first reason's code; a rejected or expired approval 403 with
 * approval_rejected or approval_expired; a cap 402 budget_exceeded; a paused one 409
 * approval_pending (`param` the approval id; send the request again with X-Invocation-Id to go on
 * waiting). `x-should-retry: false` stops the SDKs' automatic retries, which would submit anew.
 */
export function refusalOf(i: InvocationSummary, requestId: string): Reply {
  const headers = { ...invocationHeaders(i), ...NO_RETRY };
  // The contract's extra fields of the error (402: session_id, limit, remaining; 409
  // session_not_open: session_id, status), as the same refusal at admission carries them (QA).
  const extra = { request_id: requestId, invocation_id: i.id, ...i.error?.details };
  const reply = (status: number, code: string, message: string, param: string | null = null): Reply => ({
    status,
    headers,
    body: openAiError(status, code, message, param, extra),
  });
  const code = i.error?.errorCode ?? '';
  const message = i.error?.message ?? '';
  switch (i.status) {
    case 'awaiting_approval':
      return reply(409, 'approval_pending', 'a person must approve this request; it waits', i.approvalId);
    case 'queued':
    case 'evaluating':
    case 'running':
      return reply(
        409,
        'invocation_pending',
        'still running; send the request again with X-Invocation-Id',
        i.id,
      );
    case 'cancelled':
      return reply(409, 'invalid_state', 'the invocation was cancelled');
    case 'denied':
      if (code === 'guardian_denied') return reply(403, i.decision?.reasons[0]?.code ?? code, message);
      return reply(code === 'budget_exceeded' ? 402 : 403, code, message);
    default:
      return failureOf(i, reply);
  }
}

type ReplyFn = (status: number, code: string, message: string, param?: string | null) => Reply;

/** Failures of an invocation that are the caller's setup, not the provider's: no HTTP error of their own. */
const SETUP_FAILURE_STATUS: Readonly<Record<string, number>> = {
  // The credential it would run with was deleted (before the call, or while an approval held it).
  credential_not_found: 400,
};

/**
 * A failed invocation: a contract code (a cap, a closed session, the requesting key revoked or
 * expired meanwhile) answers its contract status (QA: a revoked key's call was a 502, as if the
 * provider had failed), a deleted credential 400 (QA: a 502 too); anything else is the
 * provider's failure (or an outcome unknown): a bad gateway, as a proxy answers.
 */
function failureOf(i: InvocationSummary, reply: ReplyFn): Reply {
  const code = i.error?.errorCode ?? 'internal_error';
  const message = i.error?.message ?? 'the invocation failed';
  const status = Object.hasOwn(ERROR_STATUS, code)
    ? ERROR_STATUS[code as ErrorCode]
    : (SETUP_FAILURE_STATUS[code] ?? 502);
  return reply(status, code, message);
}
