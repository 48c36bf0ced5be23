import type { Context, Middleware } from 'koa';
import { DomainError, type ErrorCode } from '../../domain/errors';
import type { RateDecision } from '../../infra/http/rate-limiters';
import type { Logger } from '../../infra/logger';
import { isUnavailableError } from '../../infra/unavailable';
import { ERROR_STATUS } from './error-status';
import { NO_RETRY, openAiError, paramOf } from './openai-errors';
import { setRateHeaders } from './rate-headers';

/** Errors thrown by Koa, its router or the body reader carry an HTTP status. */
const HTTP_STATUS_CODES: Record<number, ErrorCode> = {
  404: 'not_found',
  405: 'method_not_allowed',
  501: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

function toDomainError(err: unknown): DomainError | null {
  if (err instanceof DomainError) return err;
  if (isUnavailableError(err)) {
    return new DomainError(
      'unavailable',
      'a backing store (database or Redis) is unreachable; retry shortly',
    );
  }
  const status = (err as { status?: unknown; expose?: unknown })?.status;
  const code = typeof status === 'number' ? HTTP_STATUS_CODES[status] : undefined;
  return code ? new DomainError(code, (err as Error).message) : null;
}

/**
 * The OpenAI SDKs retry 409 and 5xx, submitting anew: every OpenAI-shaped error tells them not
 * to (`x-should-retry: false`) but these, which may succeed when sent again (with Retry-After).
 */
const MAY_SUCCEED_LATER: ReadonlySet<ErrorCode> = new Set(['rate_limited', 'unavailable', 'internal_error']);

function writeError(ctx: Context, error: DomainError): void {
  const { rate, ...extra } = error.extra as { rate?: RateDecision } & Record<string, unknown>;
  ctx.status = ERROR_STATUS[error.code];
  const requestId = ctx.state.requestId as string;
  ctx.body =
    ctx.state.errorShape === 'openai'
      ? openAiError(ctx.status, error.code, error.message, paramOf(extra), {
          request_id: requestId,
          ...extra,
        })
      : { error_code: error.code, message: error.message, request_id: requestId, ...extra };
  if (ctx.state.errorShape === 'openai' && !MAY_SUCCEED_LATER.has(error.code)) ctx.set(NO_RETRY);
  if (rate) setRateHeaders(ctx, rate);
  if (error.code === 'rate_limited') ctx.set('Retry-After', String(extra.retry_after_seconds ?? 1));
  if (error.code === 'unavailable') ctx.set('Retry-After', '2');
  if (ctx.status === 401) ctx.set('WWW-Authenticate', 'Bearer');
}

/**
 * Every failure leaves in the contract's error shape. Unknown errors become a bare
 * `internal_error`: the details go to the log under the request id, never to the client, and a
 * database error only by its code, constraint and table (its message holds the SQL's values).
 */
export const errorHandler =
  (logger: Logger): Middleware =>
  async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const known = toDomainError(err);
      if (known) {
        if (known.code === 'unavailable')
          logger.warn({ err, request_id: ctx.state.requestId }, 'store unavailable');
        return writeError(ctx, known);
      }
      logger.error(
        { err, request_id: ctx.state.requestId, method: ctx.method, path: ctx.path },
        'unhandled error',
      );
      writeError(
        ctx,
        new DomainError('internal_error', 'internal error; quote the request id when reporting it'),
      );
    }
  };
