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
  const body =
    parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : { message: typeof parsed === 'string' && parsed ? parsed : `HTTP ${response.status}` };
  return new ControlPlaneError(response.status, body, {
    requestId: response.headers.get('x-request-id') ?? undefined,
  });
}

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

/** A 2xx answer that is not JSON: whatever answered is not the API (a web server, another port). */
export function notTheApi(cause: unknown): ControlPlaneError {
  return new ControlPlaneError(
    0,
    {
      error_code: 'unexpected_answer',
      message:
        "the server's answer is not the API's JSON: is CP_BASE_URL (or --base-url) the control plane's URL?",
    },
    { cause },
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
