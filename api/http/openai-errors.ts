/** Tells the OpenAI SDKs not to retry: they retry 409 and 5xx, and a retry is submitted anew. */
export const NO_RETRY = { 'x-should-retry': 'false' } as const;

/** The field a validation error names, as OpenAI's `param`. */
export const paramOf = (extra: Record<string, unknown>): string | null => {
  const details = extra.details as { path?: string }[] | undefined;
  return details?.[0]?.path ?? null;
};

/** OpenAI's error `type` for a status: what its SDKs and the frameworks on them expect. */
function typeOf(status: number): string {
  if (status === 400 || status === 404 || status === 409 || status === 413 || status === 415)
    return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'insufficient_quota';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  return 'api_error';
}

/**
 * The error body of the OpenAI-compatible routes: `{ error: { message, type, code, param } }`,
 * with `code` the contract's error_code and the contract's status, which the OpenAI SDKs read.
 * The contract's own fields stay at the top (error_code, message, request_id and extras such as
 * session_id or remaining), so a client of the rest of the API reads these errors the same way.
 */
export const openAiError = (
  status: number,
  code: string,
  message: string,
  param: string | null = null,
  extra: Record<string, unknown> = {},
) => ({ error: { message, type: typeOf(status), code, param }, error_code: code, message, ...extra });
