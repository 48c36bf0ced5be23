import { DomainError, type ErrorCode } from '../../domain/errors';
import { ERROR_STATUS } from '../http/error-status';
import { openAiError, paramOf } from '../http/openai-errors';
import type { Reply } from '../http/route';

/** Tells the OpenAI SDKs not to retry: they retry 409 and 5xx, and a retry is submitted anew. */
export const NO_RETRY = { 'x-should-retry': 'false' } as const;

/** What may succeed when sent again: these go on to the error handler (with Retry-After). */
const MAY_SUCCEED_LATER: ErrorCode[] = ['rate_limited', 'unavailable', 'internal_error'];

/**
 * Runs a chat route's handler and answers what it refuses, when sending the same request again
 * cannot change the answer (validation_error, unpriced_model, budget_exceeded, an unknown session,
 * session_not_open, ...), as the error handler would, plus `x-should-retry: false`.
 */
export async function answeringWithoutRetry(requestId: string, handle: () => Promise<Reply>): Promise<Reply> {
  try {
    return await handle();
  } catch (err) {
    if (!(err instanceof DomainError) || MAY_SUCCEED_LATER.includes(err.code)) throw err;
    const status = ERROR_STATUS[err.code];
    return {
      status,
      headers: { ...NO_RETRY },
      body: openAiError(status, err.code, err.message, paramOf(err.extra), {
        request_id: requestId,
        ...err.extra,
      }),
    };
  }
}
