/** Every failure the client reports: an error answer of the API, or no answer at all. */
export class ControlPlaneError extends Error {
  override readonly name = 'ControlPlaneError';
  /** The HTTP status; 0 when no answer came (network failure, client-side timeout). */
  readonly status: number;
  /** The contract's error_code; `network_error` when no answer came. */
  readonly errorCode: string;
  /** The request's id (the body's request_id, or the X-Request-Id header): quote it to operators. */
  readonly requestId: string | undefined;
  /** The body's details (field-level problems of a validation_error). */
  readonly details: unknown;
  /** The whole error body, with any extra fields (limit, remaining, required_scope, ...). */
  readonly body: Record<string, unknown>;

  constructor(
    status: number,
    body: Record<string, unknown>,
    options: { requestId?: string | undefined; cause?: unknown } = {},
  ) {
    const message = typeof body.message === 'string' ? body.message : `HTTP ${status}`;
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.body = body;
    this.errorCode = typeof body.error_code === 'string' ? body.error_code : `http_${status}`;
    this.requestId = typeof body.request_id === 'string' ? body.request_id : options.requestId;
    this.details = body.details;
  }
}

/** The error a non-2xx answer stands for; `parsed` is the body openapi-fetch read (JSON or text). */
export function errorFromResponse(response: Response, parsed: unknown): ControlPlaneError {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  if (!isApiError(parsed)) return notTheApi(null, response.status, requestId);
  return new ControlPlaneError(response.status, parsed, { requestId });
}

/** Every error of the API is a JSON object with its error_code (OpenAI-shaped ones nest it). */
const isApiError = (parsed: unknown): parsed is Record<string, unknown> =>
  !!parsed &&
  typeof parsed === 'object' &&
  !Array.isArray(parsed) &&
  (typeof (parsed as { error_code?: unknown }).error_code === 'string' ||
    typeof (parsed as { error?: { code?: unknown } }).error?.code === 'string');

/** No answer: the message says what to check, since the cause is almost always where the server is. */
export function networkError(baseUrl: string, cause: unknown): ControlPlaneError {
  const reason = describeCause(cause) ?? messageOf(cause) ?? String(cause);
  return new ControlPlaneError(
    0,
    {
      error_code: 'network_error',
      message: `no answer from ${baseUrl} (${reason}): is the server at ${baseUrl} running, and is the URL right (CP_BASE_URL)?`,
    },
    { cause },
  );
}

/**
 * An answer that is not the API's JSON (a 2xx one that is not JSON, an error without the API's
 * error_code): whatever answered is not the API (a web server, another port, a proxy's page). Its
 * body is not repeated: it may be a whole HTML page. `status` is the answer's, 0 for a 2xx one.
 */
export function notTheApi(cause: unknown, status = 0, requestId?: string): ControlPlaneError {
  const answered = status > 0 ? ` (HTTP ${status})` : '';
  return new ControlPlaneError(
    status,
    {
      error_code: 'unexpected_answer',
      message: `the server's answer${answered} is not the API's JSON: is CP_BASE_URL (or --base-url) the control plane's URL?`,
    },
    { requestId, ...(cause === null ? {} : { cause }) },
  );
}

// Duck-typed, not `instanceof Error`: fetch's errors may come from another realm (a test VM, a polyfill).
const messageOf = (value: unknown) =>
  value && typeof value === 'object' && typeof (value as { message?: unknown }).message === 'string'
    ? (value as { message: string }).message
    : undefined;

/** undici reports `fetch failed` and keeps the useful part (ECONNREFUSED ...) in `cause`. */
function describeCause(error: unknown): string | undefined {
  const cause = error && typeof error === 'object' ? (error as { cause?: unknown }).cause : undefined;
  if (!cause || typeof cause !== 'object') return undefined;
  const code = (cause as { code?: unknown }).code;
  return typeof code === 'string' ? code : messageOf(cause);
}
