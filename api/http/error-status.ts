import type { ErrorCode } from '../../domain/errors';

/** The one table from domain error codes to HTTP statuses. */
export const ERROR_STATUS: Record<ErrorCode, number> = {
  invalid_json: 400,
  validation_error: 400,
  unpriced_model: 400,
  missing_credentials: 401,
  invalid_api_key: 401,
  expired_api_key: 401,
  invalid_credentials: 401,
  budget_exceeded: 402,
  insufficient_scope: 403,
  self_approval_forbidden: 403,
  csrf_failed: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  session_not_open: 409,
  invalid_state: 409,
  idempotency_conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
};
