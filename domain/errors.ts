/**
 * Domain errors carry a stable code; the HTTP adapter owns the one table that maps codes to
 * statuses (api/http/error-status.ts). Extra fields are part of the contract's error body.
 */
export const ERROR_CODES = [
  'invalid_json',
  'validation_error',
  'unpriced_model',
  'missing_credentials',
  'invalid_api_key',
  'expired_api_key',
  'invalid_credentials',
  'budget_exceeded',
  'insufficient_scope',
  'self_approval_forbidden',
  'csrf_failed',
  'not_found',
  'method_not_allowed',
  'conflict',
  'session_not_open',
  'invalid_state',
  'idempotency_conflict',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'internal_error',
  'unavailable',
  // Refused by the HTTP parser before any route sees the request (api/http/client-errors.ts).
  'malformed_request',
  'request_timeout',
  'headers_too_large',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ValidationDetail {
  path: string;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const notFound = (what: string): DomainError => new DomainError('not_found', `${what} not found`);

export const conflict = (message: string): DomainError => new DomainError('conflict', message);

export const validationError = (details: ValidationDetail[]): DomainError =>
  new DomainError('validation_error', details[0]?.message ?? 'invalid request', { details });

export const invalidField = (path: string, message: string): DomainError =>
  validationError([{ path, message }]);

/**
 * 429 `rate_limited`: `what` was refused for now; the message says when to retry, and so does the
 * answer's Retry-After (`retry_after_seconds`, at least 1).
 */
export const rateLimited = (
  what: string,
  retrySeconds: number,
  extra: Record<string, unknown> = {},
): DomainError => {
  const retry = Math.max(1, Math.ceil(retrySeconds));
  return new DomainError('rate_limited', `${what}; retry in ${retry} s`, {
    retry_after_seconds: retry,
    ...extra,
  });
};

export const invalidState = (status: string, message: string): DomainError =>
  new DomainError('invalid_state', message, { status });
